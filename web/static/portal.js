// The portal's only script (a module, no inline handlers: the CSP allows script from 'self' alone). Forms and
// buttons that change state send JSON to /portal/api with the session's CSRF token; reading pages are plain links.

const csrf = document.querySelector('meta[name="csrf-token"]')?.getAttribute("content") ?? "";
const notice = document.getElementById("notice");

function say(text, isError) {
  if (!notice) return;
  notice.textContent = text;
  notice.classList.toggle("error", Boolean(isError));
}

// A notice that outlives a reload: set before location.reload(), shown once on the next page.
const PENDING_NOTICE = "attestd-notice";
function sayAfterReload(text) {
  sessionStorage.setItem(PENDING_NOTICE, text);
  location.reload();
}
const pending = sessionStorage.getItem(PENDING_NOTICE);
if (pending) {
  sessionStorage.removeItem(PENDING_NOTICE);
  say(pending);
}

function errorText(json, status) {
  const detail = json.data ? `: ${json.data}` : "";
  return `${json.message ?? status}${detail}${json.errorId ? ` (error id ${json.errorId})` : ""}`;
}

async function call(method, url, body) {
  const res = await fetch(url, {
    method,
    credentials: "same-origin",
    headers: {
      accept: "application/json",
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(csrf ? { "x-csrf-token": csrf } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const json = text ? JSON.parse(text) : {};
  if (!res.ok) throw new Error(errorText(json, res.status));
  return json;
}

/** A POST through XMLHttpRequest, whose upload reports progress (fetch's does not), into a <progress>. */
function upload(url, body, progress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", url);
    xhr.setRequestHeader("content-type", "application/json");
    xhr.setRequestHeader("accept", "application/json");
    if (csrf) xhr.setRequestHeader("x-csrf-token", csrf);
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable) progress.value = Math.round((e.loaded / e.total) * 100);
    });
    xhr.addEventListener("load", () => {
      let json = {};
      try {
        json = xhr.responseText ? JSON.parse(xhr.responseText) : {};
      } catch {
        // not JSON: the status stands in
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(json);
      else reject(new Error(errorText(json, xhr.status)));
    });
    xhr.addEventListener("error", () => reject(new Error("The upload failed: the server could not be reached.")));
    xhr.send(body);
  });
}

/** Saves `text` as a file the browser downloads (the only copy of a client's keys.json). */
function download(text, name) {
  const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

function formBody(form) {
  const body = {};
  for (const el of form.elements) {
    if (!el.name || el.type === "submit") continue;
    if (el.type === "checkbox") body[el.name] = el.checked;
    else if (el.type === "number") {
      if (el.value !== "") body[el.name] = Number(el.value); // empty: the server's default
    } else body[el.name] = el.value;
  }
  if (form.hasAttribute("data-invite")) body.token = location.hash.slice(1);
  return body;
}

for (const form of document.querySelectorAll("form[data-api]")) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector('button[type="submit"]');
    if (button) button.setAttribute("aria-busy", "true");
    try {
      const result = await call(form.dataset.method ?? "POST", form.dataset.api, formBody(form));
      if (form.dataset.download) {
        download(result[form.dataset.download], form.dataset.downloadName ?? "download.json");
        form.reset();
        const done = document.getElementById("download-done");
        if (done) done.hidden = false;
        say(`Client ${result.client?.clientId ?? ""} created; ${form.dataset.downloadName} downloaded. It is the only copy of its keys.`);
      } else if (form.hasAttribute("data-show-key")) {
        document.getElementById("new-key-value").textContent = result.key;
        document.getElementById("new-key").hidden = false;
        say(`Key ${result.keyId} created. Reload the page to see it in the list.`);
        form.reset();
      } else if (form.dataset.then) {
        location.assign(form.dataset.then);
      } else {
        location.reload();
      }
    } catch (err) {
      say(err.message, true);
    } finally {
      if (button) button.removeAttribute("aria-busy");
    }
  });
}

for (const button of document.querySelectorAll("button[data-api]")) {
  button.addEventListener("click", async () => {
    if (button.dataset.confirm && !confirm(button.dataset.confirm)) return;
    try {
      await call(button.dataset.method ?? "POST", button.dataset.api, button.dataset.body ? JSON.parse(button.dataset.body) : undefined);
      location.reload();
    } catch (err) {
      say(err.message, true);
    }
  });
}

for (const button of document.querySelectorAll("button[data-signout]")) {
  button.addEventListener("click", async () => {
    try {
      await call("DELETE", "/portal/api/session");
    } finally {
      location.assign("/portal/signin");
    }
  });
}

for (const button of document.querySelectorAll("button[data-copy]")) {
  button.addEventListener("click", async () => {
    const text = document.getElementById(button.dataset.copy)?.textContent ?? "";
    try {
      await navigator.clipboard.writeText(text);
      say("Copied.");
    } catch {
      say("Copying was refused by the browser; select the key and copy it by hand.", true);
    }
  });
}

for (const form of document.querySelectorAll("form[data-upload]")) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = form.querySelector('input[type="file"]')?.files?.[0];
    const progress = form.querySelector("progress");
    const button = form.querySelector('button[type="submit"]');
    // the outcome is said beside the form, where the person is looking
    const status = form.querySelector("[data-upload-status]");
    const tell = (text, isError) => {
      status.textContent = text;
      status.classList.toggle("error", Boolean(isError));
    };
    if (!file) return tell("Choose a file first.", true);
    if (file.size > Number(form.dataset.maxBytes)) return tell(`${file.name} is larger than ${form.dataset.maxBytes} bytes; nothing was sent.`, true);
    button?.setAttribute("aria-busy", "true");
    progress.hidden = false;
    progress.value = 0;
    tell(`Uploading ${file.name}…`);
    try {
      const result = await upload(form.dataset.upload, JSON.stringify({ filename: file.name, content: await file.text() }), progress);
      sayAfterReload(`${result.imported} reference set(s) from ${file.name} stored.`);
    } catch (err) {
      progress.hidden = true;
      tell(`Nothing was stored. ${err.message}`, true);
    } finally {
      button?.removeAttribute("aria-busy");
    }
  });
}
