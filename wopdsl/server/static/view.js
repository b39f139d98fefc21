// Rendering helpers. Everything a member or person wrote goes through textContent (never
// an HTML string), so message text, ids and roles can never become markup or script.

/** Create an element with a class and text. */
export function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/** Fill `node` with `text`, @mentions of `members` highlighted. */
export function withMentions(node, text, members) {
  const re = /@([A-Za-z0-9_.-]+)/g;
  let at = 0;
  let m;
  while ((m = re.exec(text)) !== null) {
    let name = m[1];
    while (name && !members.has(name) && /[.-]$/.test(name)) name = name.slice(0, -1);
    if (!members.has(name)) continue;
    if (m.index > at) node.append(document.createTextNode(text.slice(at, m.index)));
    node.append(el("span", "mention", `@${name}`));
    at = m.index + 1 + name.length;
  }
  if (at < text.length) node.append(document.createTextNode(text.slice(at)));
  return node;
}

function clock(ts) {
  if (typeof ts !== "number") return "";
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? "" : d.toLocaleTimeString();
}

/** One message's list item (`hidden`: the placeholder of a post hidden until its round ends). */
export function messageNode(msg, members, hidden = null) {
  const kind = msg.role === "user" ? "user" : msg.role === "system" ? "system" : "agent";
  const li = el("li", `msg ${kind}${hidden ? " hidden" : ""}`);
  li.dataset.seq = String(msg.seq);
  li.dataset.id = msg.id;
  const head = el("div", "head");
  head.append(el("span", "from", msg.from),
    el("span", "role", msg.memberRole || msg.role), el("span", "time", clock(msg.ts)));
  li.append(head, hidden ? el("div", "text", hidden) : withMentions(el("div", "text"), msg.text, members));
  return li;
}

/**
 * A room's message list with at most `cap` rendered nodes: following the tail by default,
 * "show earlier" pages back through older messages, "jump to latest" returns.
 */
export class MessageWindow {
  constructor({ list, scroller, earlier, later, cap = 300, page = 200 }) {
    Object.assign(this, { list, scroller, earlier, later, cap, page });
    this.messages = [];
    this.members = new Set();
    this.start = 0; // index of the first rendered message
    this.end = 0;   // one past the last rendered message
    this.following = true;
    this.conceal = () => null; // msg -> placeholder text while it is hidden (deliberation.js)
    earlier.addEventListener("click", () => this.showEarlier());
    later.addEventListener("click", () => this.jumpToLatest());
  }

  /** Show another room's messages. */
  show(messages, members) {
    this.messages = messages;
    this.members = members;
    this.following = true;
    this.render();
    this.toBottom();
  }

  node(msg) { return messageNode(msg, this.members, this.conceal(msg)); }

  /** Render the window from scratch. */
  render() {
    const n = this.messages.length;
    if (this.following) { this.end = n; this.start = Math.max(0, n - this.cap); }
    const frag = document.createDocumentFragment();
    for (let i = this.start; i < this.end; i++) frag.append(this.node(this.messages[i]));
    this.list.replaceChildren(frag);
    this.buttons();
  }

  /** New messages were pushed onto the shown array: append what the window follows. */
  appended() {
    if (!this.following) { this.buttons(); return; }
    const stick = this.nearBottom();
    const n = this.messages.length;
    const frag = document.createDocumentFragment();
    for (let i = Math.max(this.end, n - this.cap); i < n; i++) frag.append(this.node(this.messages[i]));
    if (this.end < n - this.cap) this.list.replaceChildren();
    this.list.append(frag);
    this.end = n;
    while (this.list.childElementCount > this.cap) this.list.firstElementChild.remove();
    this.start = n - this.list.childElementCount;
    this.buttons();
    if (stick) this.toBottom();
  }

  showEarlier() {
    this.following = false;
    const firstShown = this.list.firstElementChild;
    this.start = Math.max(0, this.start - this.page);
    this.end = Math.min(this.messages.length, this.start + this.cap);
    this.render();
    if (firstShown) {
      const again = this.list.querySelector(`[data-seq="${firstShown.dataset.seq}"]`);
      if (again) again.scrollIntoView({ block: "start" });
    }
  }

  jumpToLatest() { this.following = true; this.render(); this.toBottom(); }

  buttons() {
    this.earlier.hidden = this.start === 0;
    if (!this.earlier.hidden) this.earlier.textContent = `Show earlier messages (${this.start} more)`;
    this.later.hidden = this.following || this.end >= this.messages.length;
  }

  nearBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < 80;
  }

  toBottom() { this.scroller.scrollTop = this.scroller.scrollHeight; }
}

/** @-completion for a textarea: a list of the room's members matching the typed prefix. */
export class Completer {
  constructor(textarea, box) {
    this.textarea = textarea;
    this.box = box;
    this.members = [];
    this.items = [];
    this.active = 0;
    textarea.addEventListener("input", () => this.update());
    textarea.addEventListener("keydown", (e) => this.key(e));
    textarea.addEventListener("blur", () => setTimeout(() => this.hide(), 150));
  }

  setMembers(members) { this.members = members; this.hide(); }

  prefix() {
    const t = this.textarea;
    const before = t.value.slice(0, t.selectionStart);
    const m = /(^|\s)@([A-Za-z0-9_.-]*)$/.exec(before);
    return m ? m[2] : null;
  }

  update() {
    const p = this.prefix();
    if (p === null) { this.hide(); return; }
    this.items = this.members.filter((m) => m.id.toLowerCase().startsWith(p.toLowerCase()));
    if (!this.items.length) { this.hide(); return; }
    this.active = 0;
    const frag = document.createDocumentFragment();
    this.items.forEach((m, i) => {
      const li = el("li", "", `@${m.id}`);
      li.dataset.member = m.id;
      li.append(el("span", "role", m.role));
      li.setAttribute("aria-selected", String(i === 0));
      li.addEventListener("mousedown", (e) => { e.preventDefault(); this.pick(i); });
      frag.append(li);
    });
    this.box.replaceChildren(frag);
    this.box.hidden = false;
  }

  key(e) {
    if (this.box.hidden) return;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      this.active = (this.active + (e.key === "ArrowDown" ? 1 : -1) + this.items.length) % this.items.length;
      [...this.box.children].forEach((li, i) => li.setAttribute("aria-selected", String(i === this.active)));
    } else if (e.key === "Tab" || e.key === "Enter") {
      e.preventDefault();
      e.stopImmediatePropagation();
      this.pick(this.active);
    } else if (e.key === "Escape") {
      this.hide();
    }
  }

  pick(i) {
    const t = this.textarea;
    const p = this.prefix();
    if (p === null) return;
    const at = t.selectionStart;
    const head = t.value.slice(0, at - p.length) + this.items[i].id + " ";
    t.value = head + t.value.slice(at);
    t.selectionStart = t.selectionEnd = head.length;
    this.hide();
    t.focus();
  }

  hide() { this.box.hidden = true; this.box.replaceChildren(); }
}
