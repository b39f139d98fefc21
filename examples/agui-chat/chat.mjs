// The page: draws createChat's view, sends the chat box, decides tool calls.
import { createChat } from "./chat-core.mjs";

const council = new URLSearchParams(location.search).get("council") || "desk";
const $ = (selector) => document.querySelector(selector);
const text = (tag, content, className) => {
  const node = document.createElement(tag);
  node.textContent = content;  // Never markup: what members write stays text.
  if (className) node.className = className;
  return node;
};

const chat = createChat({
  url: `/agui/${encodeURIComponent(council)}`,
  threadId: sessionStorage.getItem(`thread:${council}`) || crypto.randomUUID(),
  onChange: draw,
});
sessionStorage.setItem(`thread:${council}`, chat.agent.threadId);
$("#council").textContent = council;

function draw({ messages, state, interrupts, running, error }) {
  const list = $("#messages");
  list.replaceChildren(...messages.map((m) => {
    const item = text("li", "", m.role);
    const who = m.name ? `${m.name}${m.metadata?.wopdsl?.room ? " · " + m.metadata.wopdsl.room : ""}`
      : m.role;
    item.append(text("b", who), text("span", m.content ?? ""));
    for (const call of m.toolCalls ?? []) {
      item.append(text("code", `${call.function.name}(${call.function.arguments})`));
    }
    return item;
  }));
  const roster = Object.entries(state?.roster ?? {});
  $("#roster").replaceChildren(...roster.map(([id, m]) =>
    text("li", `${id} (${m.role}): ${m.phase}, ${m.turnsLeft} turns left`)));
  $("#status").textContent = running ? "the council is working…" : (state?.status ?? "");
  $("#asks").replaceChildren(...interrupts.map((i) => {
    const item = text("li", i.message ?? i.reason);
    if (i.reason === "tool_approval") {
      for (const action of ["accept", "reject"]) {
        const button = text("button", action);
        button.onclick = () => chat.decide(i.id, action);
        item.append(button);
      }
    }
    return item;
  }));
  $("#error").textContent = error ?? "";
}

$("#composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const box = $("#box");
  if (box.value.trim()) chat.send(box.value.trim());
  box.value = "";
});
