// The readable part of a model member's answer while it streams. An llm member answers with
// a JSON turn result ({"summary", "posts": [{"roomId", "text", "mentions"}]}); what a person
// wants to watch is the text of its posts, not the JSON around it. The answer is cut off at
// any character, so this is a tolerant scanner, not JSON.parse.

/** Read a JSON string starting after its opening quote; `done` is false if it was cut off. */
function readString(raw, at) {
  let out = "";
  let i = at;
  while (i < raw.length) {
    const c = raw[i];
    if (c === '"') return { text: out, end: i + 1, done: true };
    if (c !== "\\") { out += c; i++; continue; }
    const e = raw[i + 1];
    if (e === undefined) break; // a cut-off escape: drop it until the rest arrives
    if (e === "u") {
      const hex = raw.slice(i + 2, i + 6);
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) break;
      out += String.fromCharCode(parseInt(hex, 16));
      i += 6;
      continue;
    }
    out += { n: "\n", t: "\t", r: "\r", b: "\b", f: "\f" }[e] ?? e;
    i += 2;
  }
  return { text: out, end: raw.length, done: false };
}

/**
 * The posts of a (possibly cut-off) JSON turn result: [{roomId, text}], as far as they
 * arrived; `null` when the answer does not look like JSON (plain text is shown as it is).
 */
export function partialPosts(answer) {
  let body = answer.trimStart();
  if (body.startsWith("```")) { // a fenced answer: ```json …
    const nl = body.indexOf("\n");
    body = nl < 0 ? "" : body.slice(nl + 1).trimStart();
  }
  if (!body) return [];
  if (body[0] !== "{") return null;
  const raw = body;
  let i = 0;
  const posts = [];
  const stack = []; // {obj: true, key, wantKey} or {obj: false, index}
  const valueStarts = () => { const top = stack[stack.length - 1]; if (top && !top.obj) top.index++; };
  while (i < raw.length) {
    const c = raw[i];
    const top = stack[stack.length - 1];
    if (c === "{" || c === "[") {
      valueStarts();
      stack.push(c === "{" ? { obj: true, key: null, wantKey: true } : { obj: false, index: -1 });
      i++;
    } else if (c === "}" || c === "]") {
      stack.pop();
      i++;
    } else if (c === ":") {
      if (top && top.obj) top.wantKey = false;
      i++;
    } else if (c === ",") {
      if (top && top.obj) { top.wantKey = true; top.key = null; }
      i++;
    } else if (c === '"') {
      const s = readString(raw, i + 1);
      if (top && top.obj && top.wantKey) {
        if (!s.done) break;
        top.key = s.text;
      } else {
        valueStarts();
        const [root, list, post] = stack;
        if (stack.length === 3 && root.key === "posts" && !list.obj && post.obj &&
            (post.key === "text" || post.key === "roomId")) {
          const entry = posts[list.index] || (posts[list.index] = { roomId: null, text: "" });
          if (post.key === "text") entry.text = s.text;
          else if (s.done) entry.roomId = s.text;
        }
      }
      i = s.end;
    } else if (/\s/.test(c)) {
      i++;
    } else {
      valueStarts(); // a number, true, false or null: skip to its end
      while (i < raw.length && !/[\s,\]}]/.test(raw[i])) i++;
    }
  }
  return posts.filter(Boolean);
}

/** What to show of a streamed answer in room `roomId`: its posts there, or the raw text. */
export function streamedText(raw, roomId) {
  const posts = partialPosts(raw);
  if (posts === null) return raw;
  return posts.filter((p) => p.roomId === null || p.roomId === roomId).map((p) => p.text)
    .filter((t) => t).join("\n\n");
}
