"""An OpenAI Agents SDK agent loop through `lro history`, run by
tests/command/history.rs against chat_provider.py's scripted model
`looper`: the SDK runs the tool `read_log` itself, six times (each answer
a ~7k-token log), then the model reads turn 2's log back through the
proxy's `lro_history_read` (never shown to the SDK, which would refuse a
tool it does not have) and answers.

    python agents_client.py <lro history url>

Runs the loop on Chat Completions and on Responses; prints one JSON report
(the final output, the tools the SDK ran); asserts nothing.
"""

import json
import sys

import openai
from agents import (Agent, Runner, function_tool, set_default_openai_api,
                    set_default_openai_client, set_tracing_disabled)


def log_text(turn, lines=300):
    call = f"call_{turn}"
    return "\n".join(
        f"2026-11-28T12:{turn:02d}:{i % 60:02d}Z INFO {call} req_{turn}_{i} GET /api/items/{i} took {i * 7 % 900}ms"
        for i in range(lines)
    )


RAN = []


@function_tool
def read_log(turn: int) -> str:
    """The API log of one turn."""
    RAN.append(f"read_log({turn})")
    return log_text(turn)


def run(base, api):
    RAN.clear()
    client = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="sk-test-agents", max_retries=0)
    set_default_openai_client(client, use_for_tracing=False)
    set_default_openai_api(api)
    agent = Agent(name="ops", instructions="Find why the API is slow.", tools=[read_log], model="looper")
    result = Runner.run_sync(agent, "Why is the API slow?", max_turns=20)
    return {"final": result.final_output, "ran": list(RAN)}


def main():
    set_tracing_disabled(True)
    base = sys.argv[1]
    print(json.dumps({api: run(base, api) for api in ["chat_completions", "responses"]}))


main()
