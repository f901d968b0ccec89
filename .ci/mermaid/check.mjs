// Parses mermaid graphs with mermaid's own parser and reports what a reader would see.
// stdin: a JSON array of graph texts (without the ``` fence).
// stdout: a JSON array, per graph either {"error": "..."} or
//   {"vertices": [{"id", "text", "classes"}], "edges": [[start, end]]},
// where "text" is the label as displayed: mermaid's entity codes (#35;) and HTML entities decoded
// the way its HTML labels are, so the test compares it with the task's own text.
import { JSDOM } from 'jsdom';

// mermaid sanitizes labels with DOMPurify, which needs a DOM; under Node jsdom provides it.
const { window } = new JSDOM('');
globalThis.window = window;
globalThis.document = window.document;
const { default: mermaid } = await import('mermaid');
mermaid.initialize({ startOnLoad: false });

// mermaid's encodeEntities turns `#35;` into these placeholders; its decodeEntities and then the
// browser's HTML parser turn them into the character.
function displayed(text) {
  const html = text.replace(/ﬂ°°/g, '&#').replace(/ﬂ°/g, '&').replace(/¶ß/g, ';');
  const div = window.document.createElement('div');
  div.innerHTML = html;
  return div.textContent;
}

let input = '';
for await (const chunk of process.stdin) input += chunk;
const results = [];
for (const text of JSON.parse(input)) {
  try {
    const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
    const vertices = [...diagram.db.getVertices().values()].map((v) => ({
      id: v.id,
      text: displayed(v.text),
      classes: v.classes,
    }));
    const edges = diagram.db.getEdges().map((e) => [e.start, e.end]);
    results.push({ vertices, edges });
  } catch (e) {
    results.push({ error: String(e.message ?? e) });
  }
}
process.stdout.write(JSON.stringify(results));
