// The chat's logic, without a page: an @ag-ui/client HttpAgent on one council of `wop serve`.
// chat.mjs draws it in the browser; tests/server/test_agui_example.py drives it in node.
import { HttpAgent } from "@ag-ui/client";

/**
 * A chat with the council at `url` (`http://127.0.0.1:8000/agui/<council>`, or this page's
 * own `/agui/<council>` through serve.mjs). `onChange(view)` gets, after every change:
 * {messages, state, interrupts, running, error}.
 */
export function createChat({ url, headers = {}, threadId, onChange = () => {} }) {
  const agent = new HttpAgent({ url, headers, threadId });
  const decisions = new Map();  // approval interrupt id -> {action}
  let error = null;
  const view = () => ({ messages: agent.messages, state: agent.state, running: agent.isRunning,
                        interrupts: agent.pendingInterrupts, error });
  agent.subscribe({ onMessagesChanged: () => onChange(view()),
                    onStateChanged: () => onChange(view()) });

  async function run(parameters) {
    error = null;
    onChange({ ...view(), running: true });
    try {
      await agent.runAgent(parameters);
    } catch (exc) {
      error = String(exc?.message ?? exc);
    }
    decisions.clear();
    onChange(view());
  }

  function resume(text) {
    return agent.pendingInterrupts.map((interrupt) => {
      if (interrupt.reason === "human_turn") {
        return { interruptId: interrupt.id, status: "resolved", payload: text };
      }
      return { interruptId: interrupt.id, status: "resolved",
               payload: decisions.get(interrupt.id) };
    });
  }

  return {
    agent,
    /** Send what the person typed: a new task, or their turn when the council asks for it. */
    async send(text) {
      const pending = agent.pendingInterrupts;
      if (pending.length === 0) {
        agent.addMessage({ id: crypto.randomUUID(), role: "user", content: text });
        return run({});
      }
      if (pending.some((i) => i.reason !== "human_turn" && !decisions.has(i.id))) {
        error = "decide the tool calls first";
        return onChange(view());
      }
      return run({ resume: resume(text) });
    },
    /** Accept or reject a tool call; the run goes on once every pending call is decided. */
    async decide(interruptId, action) {
      decisions.set(interruptId, { action });
      const pending = agent.pendingInterrupts;
      if (pending.every((i) => i.reason !== "human_turn" && decisions.has(i.id))) {
        return run({ resume: resume("") });
      }
      return onChange(view());
    },
  };
}
