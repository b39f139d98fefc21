// The panels of a run page drawn from the run's model (see app.js): the room tabs, the
// "writing…" placeholders of members whose tokens are streaming, and the roster; and why the
// home page cannot offer to start a council. Text goes through textContent only (view.js's el).
import { streamedText } from "./partial.js";
import { el } from "./view.js";

const $ = (id) => document.getElementById(id);

/** The room tabs, with unread counts; a click calls onSelect(run, roomId). */
export function renderTabs(run, onSelect) {
  const tabs = $("tabs");
  tabs.replaceChildren();
  for (const room of run.rooms.values()) {
    const b = el("button", "tab", room.id);
    b.type = "button";
    b.setAttribute("role", "tab");
    b.dataset.room = room.id;
    b.setAttribute("aria-selected", String(room.id === run.current));
    if (room.unread) b.append(el("span", "unread", room.unread));
    b.addEventListener("click", () => onSelect(run, room.id));
    tabs.append(b);
  }
}

/** The "writing…" placeholders of the members streaming in the shown room. */
export function renderStreams(run) {
  const box = $("streams");
  box.replaceChildren();
  const room = run.rooms.get(run.current);
  if (!room) return;
  for (const [who, text] of run.live) {
    if (!room.members.includes(who)) continue;
    const div = el("div", "msg agent streaming");
    div.dataset.member = who;
    const head = el("div", "head");
    head.append(el("span", "from", who));
    div.append(head, el("div", "text", streamedText(text, room.id)));
    box.append(div);
  }
  if (run.window.following && run.live.size) run.window.toBottom();
}

/** The shown room's roster: role, state, turns of cap, tokens and cost when reported. */
export function renderRoster(run) {
  const body = $("roster").tBodies[0];
  body.replaceChildren();
  const room = run.rooms.get(run.current);
  if (!room) return;
  for (const id of room.members) {
    const m = run.members.get(id);
    if (!m) continue;
    const tr = el("tr");
    tr.dataset.member = id;
    const state = run.live.has(id) ? "speaking" : m.state || "idle";
    const usage = m.tokens ? `${m.tokens} tok${m.cost !== null ? ` / $${m.cost.toFixed(4)}` : ""}` : "";
    tr.append(el("td", "", id), el("td", "", `${m.role} (${m.engine})`), el("td", `state-${state}`, state),
      el("td", "turns", m.maxTurns ? `${m.turns} / ${m.maxTurns}` : String(m.turns)), el("td", "", usage));
    body.append(tr);
  }
}

/** Why this host refuses to start council `w` (a room with more agent participants than it
 * allows, RFC 0101), or "" when it can start it. */
export function oversize(w, limit) {
  if (!limit) return "";
  const humans = new Set(w.members.filter((m) => m.engine === "human").map((m) => m.id));
  for (const r of w.rooms) {
    const agents = r.members.filter((m) => !humans.has(m)).length;
    if (agents > limit) {
      return `Too large for this host: room ${r.id} has ${agents} agent participants, ` +
        `the host allows ${limit} (wop serve --max-participants).`;
    }
  }
  return "";
}
