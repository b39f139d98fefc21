// How a council decides, on the run page (docs/guides/deliberation.md): each round room's
// round ("round 1 of 2 · blind · 2 of 3 answered"), a blind round's posts by others shown as
// "answered — hidden until the round ends" until it ends, the decisions (open: how many
// voted; closed: outcome, tally, dissent with reasons), the chair's answer, and a ballot for
// a human voter. Folded from the run's events like the rest of the page: the host's system
// turns (content.round, content.rounds, content.decision, content.chair) and the votes of
// each turn (node.completed outputs.votes). A vote is a turn over the interrupt endpoint:
// POST /v1/runs/{runId}/interrupts/room:{room} with {resumeValue: {operation: "exchange",
// turn: {role: "user", speakerId: "host:<voter>", content: {votes: [...]}}}}. Text goes in
// through textContent only (view.js's el).
import { api, ApiError } from "./stream.js";
import { el } from "./view.js";

const $ = (id) => document.getElementById(id);

/** Read the council's rounds, decisions and chair (its definition or run.started's). */
export function setupDeliberation(run, council) {
  if (!council) return;
  run.chair = { member: council.council?.chair || null, called: false, done: false, answer: null };
  for (const r of council.rooms || []) {
    const room = run.rooms.get(r.id);
    if (!room) continue;
    Object.assign(room, { rounds: r.rounds ?? null, blind: Boolean(r.blind), anonymous: Boolean(r.anonymous),
      round: room.round || 0, asked: room.asked || [], pending: room.pending || new Set(),
      roundSeq: room.roundSeq ?? -1, settled: Boolean(room.settled) });
  }
  const decisions = new Map();
  for (const d of council.decisions || []) {
    const room = run.rooms.get(d.room);
    const voters = d.voters || (room ? room.members.filter((m) => m !== run.chair.member) : []);
    const old = run.decisions?.get(d.id);
    decisions.set(d.id, { id: d.id, room: d.room, question: String(d.question || ""),
      options: d.options || null, scale: d.scale || null, voters,
      votes: old?.votes || new Map(), closed: old?.closed || null });
  }
  run.decisions = decisions;
  run.startedAt = run.startedAt || new Map();
  run.ballot = run.ballot || { sending: new Set(), refused: new Map() };
}

/** Fold one event; return whether what this module draws changed. */
export function foldDeliberation(run, e) {
  if (!run.decisions) return false;
  const p = e.payload || {};
  switch (e.type) {
    case "run.started":
      setupDeliberation(run, p.metadata?.council);
      return true;
    case "node.started":
      if (run.members.has(e.nodeId)) run.startedAt.set(e.nodeId, e.sequence);
      return false;
    case "node.completed": case "node.failed": {
      const who = String(e.nodeId || "");
      if (!run.members.has(who)) return false;
      const since = run.startedAt.get(who) ?? -1;
      for (const room of run.rooms.values()) {
        // A member has answered the rounds begun before its turn began.
        if (room.pending?.has(who) && since > room.roundSeq) room.pending.delete(who);
      }
      const votes = e.type === "node.completed" ? p.outputs?.votes : null;
      for (const v of Array.isArray(votes) ? votes : []) {
        const d = run.decisions.get(String(v?.decision));
        if (d && !d.closed && d.voters.includes(who)) d.votes.set(who, { choice: v.choice, reason: String(v.reason || "") });
      }
      if (who === run.chair.member && run.chair.called && e.type === "node.completed") {
        run.chair.done = true;
        run.chair.answer = p.outputs?.summary ?? null;  // the run's answer (run.completed too)
      }
      return true;
    }
    case "conversation.exchanged": {
      const t = p.turn || {};
      if (t.role !== "system" || !t.content || typeof t.content !== "object") return false;
      const c = t.content;
      const room = run.rooms.get(String(t.groupId || ""));
      if (room?.blind && (c.round || c.rounds)) run.revealed = true;  // hidden posts change
      if (room && c.round && typeof c.round === "object") {
        room.round = Number(c.round.number || room.round + 1);
        room.asked = Array.isArray(c.round.members) ? c.round.members.map(String) : [];
        room.pending = new Set(room.asked);
        room.roundSeq = e.sequence;
      }
      if (room && c.rounds?.finished) { room.settled = true; room.pending = new Set(); }
      if (c.decision && typeof c.decision === "object") {
        const d = run.decisions.get(String(c.decision.id));
        if (d) d.closed = c.decision;
      }
      if (c.chair) run.chair.called = true;
      return true;
    }
    case "run.completed":
      if (p.outputs && "answer" in p.outputs) run.chair.answer = p.outputs.answer;
      return true;
    default:
      return false;
  }
}

/** The round a new message of `room` belongs to (stored on the message as it is folded). */
export function roundOf(room) { return room.rounds ? room.round : 0; }

/** The human members this page may speak (and vote) as, by the signed-in principal. */
export function mine(run, me) {
  return new Set([...run.members.values()].filter((m) => m.engine === "human" &&
    (!me?.auth || !m.principal || m.principal === me.principal)).map((m) => m.id));
}

/** A message's placeholder while it is hidden (a blind round's post by another), or null. */
export function concealed(run, room, msg, me) {
  if (!room.blind || room.settled || !room.round || msg.role === "system" || msg.round !== room.round) return null;
  return mine(run, me).has(msg.from) ? null : `answered round ${msg.round} — hidden until the round ends`;
}

/** "round 1 of 2 · blind · 2 of 3 answered" for a round room, else "". */
export function roundLabel(room) {
  if (!room?.rounds) return "";
  const flags = [room.blind && "blind", room.anonymous && "anonymous"].filter(Boolean).map((f) => ` · ${f}`).join("");
  if (room.settled) return `${room.round} of ${room.rounds} rounds held${flags} · the debate is over`;
  if (!room.round) return `${room.rounds} round${room.rounds === 1 ? "" : "s"}${flags} · not begun`;
  const answered = room.asked.length - room.pending.size;
  return `round ${room.round} of ${room.rounds}${flags} · ${answered} of ${room.asked.length} answered`;
}

/** The round line above the shown room's messages. */
export function renderRound(run) {
  const bar = $("round");
  const label = roundLabel(run.rooms.get(run.current));
  bar.hidden = !label;
  bar.textContent = label;
}

function tallyOf(d) {
  if (d.closed) return d.closed.tally || {};
  const counts = {};
  for (const o of d.options || []) counts[o] = 0;
  for (const v of d.votes.values()) counts[String(v.choice)] = (counts[String(v.choice)] || 0) + 1;
  if (d.scale) return Object.fromEntries(Object.entries(counts).sort((a, b) => Number(a[0]) - Number(b[0])));
  return counts;
}

function headline(d, voting) {
  const counts = Object.entries(tallyOf(d)).map(([c, n]) => `${c} ${n}`).join(", ");
  if (!d.closed) {
    const voted = `${d.votes.size} of ${d.voters.length} voted`;
    if (voting) return `open · ${voted}${d.votes.size ? " · the votes show when it closes" : ""}`;
    return `open · ${voted}${counts ? ` · ${counts}` : ""}`;
  }
  const c = d.closed;
  const voted = `${c.voted ?? 0} of ${(c.voters || d.voters).length} voted`;
  const mean = typeof c.mean === "number" ? `; mean ${Number(c.mean.toPrecision(3))}` : "";
  return `${c.outcome} (${d.scale ? `median score${mean}` : counts}; ${voted})`;
}

/** The decisions panel and the chair's answer (hidden while the council has neither). */
export function renderDecisions(run, me) {
  const box = $("decisions");
  if (!run.decisions) return;
  const mayVote = mine(run, me);
  const ended = ["completed", "failed", "cancelled"].includes(run.status);
  $("decisions-head").hidden = box.hidden = !run.decisions.size && !run.chair?.member;
  const keep = new Map([...box.querySelectorAll(".decision")].map((n) => [n.dataset.decision, n]));
  const nodes = [...run.decisions.values()].map((d) => {
    const humans = d.voters.filter((v) => run.members.get(v)?.engine === "human");
    const voting = humans.filter((v) => mayVote.has(v));
    const div = el("div", "decision");
    div.dataset.decision = d.id;
    div.dataset.open = String(!d.closed);
    const q = el("div", "q");
    q.append(el("b", "", d.id), document.createTextNode(" "), el("span", "question", d.question));
    div.append(q, el("div", `state ${d.closed ? "closed" : "open"}`, headline(d, voting.length > 0)));
    for (const v of voting) {
      const cast = d.votes.get(v) || (d.closed?.votes || []).find((x) => x.voter === v);
      if (cast) div.append(el("div", "mine", `${v} voted ${cast.choice}${cast.reason ? `: ${cast.reason}` : ""}`));
    }
    for (const x of d.closed?.dissent || []) {
      const li = el("div", "dissent", `dissent: ${x.voter} (${x.choice})${x.reason ? `: ${x.reason}` : ""}`);
      li.dataset.voter = String(x.voter);
      div.append(li);
    }
    if (!d.closed && !ended && humans.length) div.append(ballot(run, me, d, humans, voting, keep.get(d.id)));
    return div;
  });
  const chair = run.chair;
  if (chair?.member) {
    const done = chair.done || chair.answer !== null;
    const a = el("div", `answer${done ? " done" : ""}`);
    a.append(el("b", "", done ? "answer" : "chair"), document.createTextNode(` (${chair.member}): `),
      el("span", "text", done ? String(chair.answer ?? "(waiting for the run's end)")
        : chair.called ? "has the last word (its answer is the run's answer)" : "speaks last, once every decision is closed"));
    nodes.push(a);
  }
  box.replaceChildren(...nodes);
}

/** A ballot: the voter, the choice, a reason, Vote; or why this page may not vote. */
function ballot(run, me, d, humans, voting, old) {
  const form = el("form", "ballot");
  if (!voting.length) {
    const names = humans.map((v) => `${run.members.get(v)?.principal} may vote as ${v}`).join("; ");
    form.append(el("p", "note", `You are signed in as ${me?.principal}; only ${names}.`));
    return form;
  }
  const who = el("select", "voter");
  who.replaceChildren(...voting.map((v) => { const o = el("option", "", v); o.value = v; return o; }));
  let choice;
  const [low, high] = d.scale ? d.scale.map(Number) : [0, 0];
  if (d.scale && high - low > 100) {  // A wide scale: type the score.
    choice = el("input", "choice");
    Object.assign(choice, { type: "number", min: String(low), max: String(high), step: "any", required: true });
  } else {
    choice = el("select", "choice");
    const choices = d.options || Array.from({ length: high - low + 1 }, (_, i) => String(low + i));
    choice.replaceChildren(...choices.map((c) => { const o = el("option", "", c); o.value = c; return o; }));
  }
  const reason = el("input", "reason");
  reason.placeholder = "reason (shown with the tally and the dissent)";
  for (const [sel, name] of [[who, ".voter"], [choice, ".choice"], [reason, ".reason"]]) {
    const before = old?.querySelector(name)?.value;
    if (before !== undefined && (sel.tagName !== "SELECT" || [...sel.options].some((o) => o.value === before))) sel.value = before;
  }
  const go = el("button", "vote", "Vote");
  go.type = "submit";
  const busy = run.ballot.sending.has(d.id);
  who.disabled = choice.disabled = reason.disabled = go.disabled = busy;
  who.hidden = voting.length < 2;
  const refused = run.ballot.refused.get(d.id);
  const error = el("p", "error", refused || "");
  error.hidden = !refused;
  if (refused) error.setAttribute("role", "alert");
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    vote(run, me, d, who.value, d.scale ? Number(choice.value) : choice.value, reason.value.trim());
  });
  form.append(who, choice, reason, go, error);
  return form;
}

async function vote(run, me, d, voter, choice, reason) {
  run.ballot.sending.add(d.id);
  run.ballot.refused.delete(d.id);
  renderDecisions(run, me);
  const resumeValue = { operation: "exchange", turn: { role: "user", speakerId: `host:${voter}`,
    content: { votes: [{ decision: d.id, choice, reason }] } } };
  const enc = encodeURIComponent;
  try {
    await api("POST", `/v1/runs/${enc(run.runId)}/interrupts/${enc(`room:${d.room}`)}`, { resumeValue });
    const form = [...document.querySelectorAll("#decisions .decision")].find((n) => n.dataset.decision === d.id);
    const field = form?.querySelector(".reason");
    if (field) field.value = "";  // cast: the next vote starts with an empty reason
  } catch (err) {
    run.ballot.refused.set(d.id, err instanceof ApiError ? `${err.message} [${err.code}]` : String(err.message || err));
  } finally {
    run.ballot.sending.delete(d.id);
    renderDecisions(run, me);
  }
}
