"""The OpenTelemetry attribute names the spans use, spelled as the semantic conventions do.

They are the values of the ``opentelemetry-semantic-conventions`` constants of the same
names (``gen_ai_attributes``, ``error_attributes``; a test checks each one), kept here so
that deriving spans (``wop trace RUN --tree``) needs no OpenTelemetry package: only sending
them does.
"""

from typing import Final

GEN_AI_AGENT_DESCRIPTION: Final = "gen_ai.agent.description"
GEN_AI_AGENT_ID: Final = "gen_ai.agent.id"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_OUTPUT_TYPE: Final = "gen_ai.output.type"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_WORKFLOW_NAME: Final = "gen_ai.workflow.name"
ERROR_TYPE: Final = "error.type"
