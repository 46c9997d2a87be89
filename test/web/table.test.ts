import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { html } from "../../web/html.ts";
import { table } from "../../web/layout.ts";

/** the table's markup with what table() adds to the cells taken out again */
const withoutAdded = (text: string) => text.replace(/ data-label="[^"]*"| data-secondary| data-long/g, "");

describe("table(): columns, labels and long values", () => {
  it("labels each cell with its column, counts colspan, keeps a cell's own label, marks secondary columns and long values", () => {
    const out = table("Keys", ["Key id", { label: "Limits", secondary: true }, "Action"], [
      html`<tr><th scope="row"><code>${"abcdefghij"}</code></th><td class="nowrap">${"server default"}</td><td><button>Revoke</button></td></tr>`,
      html`<tr><td colspan="2">${"c0ffee00112233445566778899aabbccddeeff"}</td><td data-label="Mine">x</td></tr>`,
    ]).text;
    assert.match(out, /<th scope="col" >Key id<\/th><th scope="col" data-secondary>Limits<\/th>/);
    assert.match(out, /<th data-label="Key id" scope="row"><code>abcdefghij<\/code><\/th>/, "a 10-character id is not a long value");
    assert.match(out, /<td data-label="Limits" data-secondary class="nowrap">server default<\/td>/);
    assert.match(out, /<td data-label="Key id" data-long colspan="2">c0ffee/, "a 38-character run is");
    assert.match(out, /<td data-label="Mine">x<\/td>/, "the cell's own label stays, after a colspan of two");
    assert.match(out, /class="table-wrap cards"/);
    assert.doesNotMatch(table("T", ["A"], [], { cards: false }).text, /cards/);
  });

  it("changes nothing but the cells' attributes, whatever the cells hold (escaped by html)", () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.string({ maxLength: 40 }), { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 5 }), (cells) => {
        const rows = cells.map((r) => html`<tr>${r.map((c) => html`<td>${c}</td>`)}</tr>`);
        const plain = html`${rows}`.text;
        const out = table("T", ["A", { label: "B", secondary: true }, "C", "D"], rows).text;
        const body = /<tbody>([\s\S]*)<\/tbody>/.exec(out)![1]!;
        assert.equal(withoutAdded(body), plain);
        assert.equal((body.match(/<td /g) ?? []).length, cells.flat().length, "every cell labelled");
      }),
    );
  });
});
