// The portal's only script (a module, no inline handlers: the CSP allows script from 'self' alone). Forms and
// buttons that change state send JSON to /portal/api with the session's CSRF token; reading pages are plain links.

// the menu collapses behind its button only where this script runs to open it again (portal.css: .js)
document.documentElement.classList.add("js");

const csrf = document.querySelector('meta[name="csrf-token"]')?.getAttribute("content") ?? "";
const notice = document.getElementById("notice");

function say(text, isError) {
  if (!notice) return;
  notice.textContent = text;
  notice.classList.toggle("error", Boolean(isError));
  // a refusal of a form far down the page (a key's edit) must be seen, not only announced
  if (isError) notice.scrollIntoView({ block: "nearest" });
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

/**
 * What the notice line says once a change succeeded: the form's or button's data-success (data-done, its older
 * name), else a plain "Saved." so no change passes in silence.
 */
const successOf = (el) => el.dataset.success ?? el.dataset.done ?? "Saved.";

/**
 * The in-page confirmation (web/layout.ts #confirm-dialog) in place of the browser's confirm(): the action named
 * in its title and on its button, focus moved into it (to Cancel), Escape or Cancel answers no, and focus goes back
 * to the button that asked. Resolves true when confirmed.
 */
const confirmDialog = document.getElementById("confirm-dialog");
function confirmInPage(trigger) {
  const question = trigger.dataset.confirm;
  if (!confirmDialog || typeof confirmDialog.showModal !== "function") return Promise.resolve(window.confirm(question));
  const action = (trigger.dataset.confirmAction ?? trigger.textContent).trim();
  // "Revoke key X? It stops working at once." → the question as the title, the consequences below it
  const split = /^([^?]*\?)\s*(.*)$/s.exec(question);
  confirmDialog.querySelector("#confirm-title").textContent = split ? split[1] : `${action}?`;
  confirmDialog.querySelector("#confirm-text").textContent = split ? split[2] : question;
  const ok = confirmDialog.querySelector("[data-confirm-ok]");
  const cancel = confirmDialog.querySelector("[data-confirm-cancel]");
  ok.textContent = action;
  return new Promise((resolve) => {
    const finish = (answer) => {
      ok.removeEventListener("click", yes);
      cancel.removeEventListener("click", no);
      confirmDialog.removeEventListener("close", no);
      if (confirmDialog.open) confirmDialog.close();
      if (trigger.isConnected) trigger.focus();
      resolve(answer);
    };
    const yes = () => finish(true);
    const no = () => finish(false);
    ok.addEventListener("click", yes);
    cancel.addEventListener("click", no);
    // Escape closes a modal dialog by itself ("cancel", then "close")
    confirmDialog.addEventListener("close", no);
    confirmDialog.showModal();
    cancel.focus();
  });
}

// The menu (below 1024 px): one button opens and closes the navigation; Escape closes it and returns to the button.
const menuButton = document.querySelector("button.menu-toggle");
const menu = menuButton && document.getElementById(menuButton.getAttribute("aria-controls"));
if (menuButton && menu) {
  const setOpen = (open) => {
    menuButton.setAttribute("aria-expanded", String(open));
    menu.classList.toggle("open", open);
  };
  menuButton.addEventListener("click", () => {
    const open = menuButton.getAttribute("aria-expanded") !== "true";
    setOpen(open);
    if (open) menu.querySelector("a")?.focus();
  });
  menu.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && menu.classList.contains("open")) {
      setOpen(false);
      menuButton.focus();
    }
  });
}

// Long values in tables (ids, hashes, keys): each gets a copy button beside it, so nobody selects a wrapped id by hand.
const COPYABLE_LENGTH = 12;
function addCopyButtons(root) {
  for (const code of root.querySelectorAll("td code")) {
    const text = code.textContent.trim();
    if (text.length < COPYABLE_LENGTH) continue;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "copy secondary outline";
    button.textContent = "Copy";
    button.setAttribute("aria-label", `Copy ${text}`);
    button.title = text;
    button.addEventListener("click", () => copyText(text));
    code.after(button);
  }
}
addCopyButtons(document.querySelector("main") ?? document);

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    say("Copied.");
  } catch {
    say("Copying was refused by the browser; select the text and copy it by hand.", true);
  }
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

/** Saves what the page holds as a file the browser downloads (a client's keys.json, the only copy; an export). */
function download(parts, name, type) {
  const url = URL.createObjectURL(new Blob(parts, { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** one entry per line or comma (an empty field: the empty list) */
const listOf = (text) => text.split(/[\s,]+/).filter((x) => x !== "");

/** body["a.b"] = v as body.a.b = v: a field named with a dot goes into a nested object of the JSON body */
function put(body, name, value) {
  const path = name.split(".");
  let at = body;
  for (const key of path.slice(0, -1)) at = at[key] ??= {};
  at[path[path.length - 1]] = value;
}

// data-omit-empty: a field left empty is left out (an optional field the server would otherwise refuse as "")
// a file input (data-text-file) is not read here but by textFiles, which must be awaited
// data-json-body: the form's textarea holds the whole body as JSON (the Policy page's document)
function formBody(form) {
  if (form.hasAttribute("data-json-body")) {
    try {
      return JSON.parse(form.querySelector("textarea").value);
    } catch (err) {
      throw new Error(`The document is not JSON: ${err.message}. Nothing was sent.`);
    }
  }
  const body = {};
  const omitEmpty = form.hasAttribute("data-omit-empty");
  for (const el of form.elements) {
    if (!el.name || el.type === "submit" || el.type === "file") continue;
    if (omitEmpty && el.value === "") continue;
    if (el.type === "checkbox") put(body, el.name, el.checked);
    else if (el.type === "number") {
      if (el.value !== "") put(body, el.name, Number(el.value)); // empty: the server's default
    } else put(body, el.name, el.hasAttribute("data-list") ? listOf(el.value) : el.value);
  }
  if (form.hasAttribute("data-invite")) body.token = location.hash.slice(1);
  return body;
}

/**
 * A chosen file of an input[data-text-file] goes into the JSON body as its text (a service-account key file): read
 * here in the browser, sent in the one request with the form's other fields; no file chosen, no field.
 */
async function textFiles(form, body) {
  for (const input of form.querySelectorAll("input[type=file][data-text-file]")) {
    const file = input.files?.[0];
    if (!file) continue;
    if (file.size > Number(input.dataset.maxBytes)) throw new Error(`${file.name} is larger than ${input.dataset.maxBytes} bytes; nothing was sent.`);
    put(body, input.name, await file.text());
  }
  return body;
}

/**
 * After a creation whose one-time secret stays on screen (a client's keys.json, a new API key), the page is not
 * reloaded, which would lose the secret's notice; its lists are replaced by those of a fresh copy of the page
 * instead, so the new row shows beside the notice rather than under "Nothing here yet".
 */
async function refreshLists() {
  try {
    const res = await fetch(location.href, { headers: { accept: "text/html" } });
    if (!res.ok) return;
    const fresh = new DOMParser().parseFromString(await res.text(), "text/html").querySelectorAll("main table");
    const current = document.querySelectorAll("main table");
    if (fresh.length !== current.length) return;
    current.forEach((table, i) => {
      const copy = document.importNode(fresh[i], true);
      table.replaceWith(copy);
      addCopyButtons(copy);
    });
  } catch {
    // the list stays as it was; the notice's link and a reload still show the new row
  }
}

// data-reveal="ID:field": a secret shown once (an invitation link) goes into #ID-value and #ID is shown;
// data-done is what the notice line then says
function reveal(spec, result) {
  const [id, field] = spec.split(":");
  document.getElementById(`${id}-value`).textContent = result[field];
  document.getElementById(id).hidden = false;
}

for (const form of document.querySelectorAll("form[data-api]")) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector('button[type="submit"]');
    if (button) button.setAttribute("aria-busy", "true");
    try {
      const result = await call(form.dataset.method ?? "POST", form.dataset.api, await textFiles(form, formBody(form)));
      if (form.dataset.download) {
        download([result[form.dataset.download]], form.dataset.downloadName ?? "download.json", "application/json");
        form.reset();
        const done = document.getElementById("download-done");
        if (done) done.hidden = false;
        say(`Client ${result.client?.clientId ?? ""} created; ${form.dataset.downloadName} downloaded. It is the only copy of its keys.`);
        await refreshLists();
      } else if (form.hasAttribute("data-show-key")) {
        document.getElementById("new-key-value").textContent = result.key;
        // the key-created box's commands carry the key too (web/pages/quickStart.ts curlCommands)
        for (const slot of document.querySelectorAll("[data-fill-key]")) slot.textContent = result.key;
        document.getElementById("new-key").hidden = false;
        say(form.dataset.success ?? `Key ${result.keyId} created. Copy it now: it is shown once.`);
        form.reset();
        await refreshLists();
      } else if (form.dataset.reveal) {
        reveal(form.dataset.reveal, result);
        say(successOf(form));
        form.reset();
        // the invited person (or the changed row) shows in the list at once, beside the link shown once
        await refreshLists();
      } else if (form.dataset.then) {
        if (form.dataset.success) sessionStorage.setItem(PENDING_NOTICE, form.dataset.success);
        location.assign(form.dataset.then);
      } else {
        sayAfterReload(successOf(form));
      }
    } catch (err) {
      say(err.message, true);
    } finally {
      if (button) button.removeAttribute("aria-busy");
    }
  });
}

// Delegated, so the buttons of a table replaced by refreshLists (a key's Revoke beside its just-shown secret) work too.
document.addEventListener("click", async (event) => {
  const button = event.target instanceof Element ? event.target.closest("button[data-api]") : null;
  if (!button) return;
  if (button.getAttribute("aria-busy") === "true") return;
  if (button.dataset.confirm && !(await confirmInPage(button))) return;
  button.setAttribute("aria-busy", "true");
  try {
    await call(button.dataset.method ?? "POST", button.dataset.api, button.dataset.body ? JSON.parse(button.dataset.body) : undefined);
    sayAfterReload(successOf(button));
  } catch (err) {
    say(err.message, true);
  } finally {
    button.removeAttribute("aria-busy");
  }
});

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
    await copyText(document.getElementById(button.dataset.copy)?.textContent ?? "");
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

// An export (a[data-export]) is fetched here rather than followed, so the page can say how many rows have come so
// far; the server streams it page by page. The rows are counted by their line ends outside quoted cells.
for (const link of document.querySelectorAll("a[data-export]")) {
  const status = document.getElementById(link.dataset.export);
  const show = (text) => {
    if (status) status.textContent = text;
  };
  link.addEventListener("click", async (event) => {
    event.preventDefault();
    if (link.getAttribute("aria-busy") === "true") return;
    link.setAttribute("aria-busy", "true");
    let rows = -1; // the header line is not a row
    try {
      const res = await fetch(link.href, { credentials: "same-origin", headers: { accept: "text/csv" } });
      if (!res.ok) {
        const json = await res.json().catch(() => ({}));
        throw new Error(`${json.message ?? res.status}${json.data ? `: ${json.data}` : ""}`);
      }
      const reader = res.body.getReader();
      const chunks = [];
      let quoted = false;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        for (const byte of value) {
          if (byte === 34) quoted = !quoted;
          else if (byte === 10 && !quoted) rows++;
        }
        show(`Exporting… ${Math.max(rows, 0).toLocaleString("en")} rows so far`);
      }
      const name = /filename="([^"]+)"/.exec(res.headers.get("content-disposition") ?? "")?.[1] ?? "export.csv";
      download(chunks, name, "text/csv");
      link.dataset.rows = String(rows);
      show(`Exported ${rows.toLocaleString("en")} rows to ${name}.`);
    } catch (err) {
      show(`The export failed: ${err.message}`);
    } finally {
      link.removeAttribute("aria-busy");
    }
  });
}

// Passkeys, with @simplewebauthn/browser: loaded only on the pages that offer them, from this service (CSP 'self').
let webauthn;
function simpleWebAuthn() {
  webauthn ??= new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = "/portal/assets/vendor/simplewebauthn-browser.js";
    script.onload = () => resolve(window.SimpleWebAuthnBrowser);
    script.onerror = () => reject(new Error("The passkey script did not load; reload the page."));
    document.head.append(script);
  });
  return webauthn;
}

const passkeysWork = typeof window.PublicKeyCredential === "function";

// The browser's own errors are about the prompt (cancelled, timed out, no passkey here): say so plainly.
function passkeyTrouble(err) {
  if (err && (err.name === "NotAllowedError" || err.name === "AbortError")) return "The passkey prompt was cancelled or timed out.";
  if (err && err.name === "InvalidStateError") return "This authenticator already holds a passkey for this account.";
  return err.message;
}

for (const box of document.querySelectorAll("[data-passkey-only]")) box.hidden = !passkeysWork;

for (const button of document.querySelectorAll("button[data-passkey-signin]")) {
  button.addEventListener("click", async () => {
    button.setAttribute("aria-busy", "true");
    try {
      const { startAuthentication } = await simpleWebAuthn();
      const options = await call("POST", "/portal/api/session/passkey/options");
      const credential = await startAuthentication({ optionsJSON: options });
      await call("POST", "/portal/api/session/passkey", credential);
      location.assign(button.dataset.then ?? "/portal/");
    } catch (err) {
      say(passkeyTrouble(err), true);
    } finally {
      button.removeAttribute("aria-busy");
    }
  });
}

for (const form of document.querySelectorAll("form[data-passkey-register]")) {
  if (!passkeysWork) {
    form.querySelector('button[type="submit"]').disabled = true;
    say("This browser cannot make passkeys.", true);
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector('button[type="submit"]');
    button.setAttribute("aria-busy", "true");
    try {
      const { startRegistration } = await simpleWebAuthn();
      const options = await call("POST", "/portal/api/passkeys/options");
      const credential = await startRegistration({ optionsJSON: options });
      const name = form.elements.name.value.trim();
      await call("POST", "/portal/api/passkeys", { credential, ...(name ? { name } : {}) });
      sayAfterReload(`Passkey ${name ? `“${name}” ` : ""}added.`);
    } catch (err) {
      say(passkeyTrouble(err), true);
    } finally {
      button.removeAttribute("aria-busy");
    }
  });
}

if (document.querySelector("canvas[data-chart]")) import("./overview.js").catch((err) => say(`The charts could not be drawn: ${err.message}`, true));
