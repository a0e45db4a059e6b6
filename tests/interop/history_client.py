"""Agent loops on the official `openai` and `anthropic` Python clients
through `lro history` to chat_provider.py, run by tests/command/history.rs.

    python history_client.py <lro history url> <provider record.jsonl>

Runs, through the proxy: a 12-turn OpenAI Chat Completions loop whose tool
answers are ~7k-token logs (every fifth turn two parallel calls), its last
request streamed; a 12-turn Anthropic Messages loop of the same kind, its
last request streamed; a 6-turn OpenAI Responses loop, then one request with
`previous_response_id`; `GET /v1/models`; a 50-turn Chat Completions loop
with ~1.5k-token answers (`long`: the indices of its requests). Every request body the clients
send is captured (httpx2 event hooks) and compared with what the provider
recorded. Prints one JSON report; it asserts nothing itself.
"""

import json
import os
import sys

import anthropic
import httpx2
import openai

TURNS = int(os.environ.get("HISTORY_TURNS", "12"))
LINES = 300
SENT = []


def capture(request):
    SENT.append({
        "path": request.url.path,
        "body": request.content.decode(),
        "authorization": request.headers.get("authorization"),
        "x_api_key": request.headers.get("x-api-key"),
    })


def log_text(turn, call, lines=LINES):
    return "\n".join(
        f"2026-11-28T12:{turn:02d}:{i % 60:02d}Z INFO {call} req_{turn}_{i} GET /api/items/{i} took {i * 7 % 900}ms"
        for i in range(lines)
    )


def calls_of(turn):
    return [f"call_{turn}_a"] + ([f"call_{turn}_b"] if turn % 5 == 0 else [])


def openai_chat(base, http):
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-test-openai", max_retries=0, http_client=http)
    messages = [{"role": "system", "content": "You are an operations agent."},
                {"role": "user", "content": "Why is the API slow?"}]
    for turn in range(1, TURNS + 1):
        calls = calls_of(turn)
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": c, "type": "function", "function": {"name": "read_log", "arguments": json.dumps({"turn": turn})}}
            for c in calls]})
        for c in calls:
            messages.append({"role": "tool", "tool_call_id": c, "content": log_text(turn, c)})
        if turn < TURNS:
            answer = client.chat.completions.create(model="stand-in", messages=messages)
            messages.append({"role": "assistant", "content": answer.choices[0].message.content})
    stream = client.chat.completions.create(model="stand-in", messages=messages, stream=True)
    streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    models = [m.id for m in client.models.list()]
    return {"streamed": streamed, "models": models}


def anthropic_messages(base, http):
    client = anthropic.Anthropic(base_url=base, api_key="sk-test-anthropic", max_retries=0, http_client=http)
    messages = [{"role": "user", "content": "Why is the API slow?"}]
    for turn in range(1, TURNS + 1):
        calls = calls_of(turn)
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": c, "name": "read_log", "input": {"turn": turn}} for c in calls]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": c, "content": log_text(turn, c)} for c in calls]})
        if turn < TURNS:
            answer = client.messages.create(model="stand-in", max_tokens=64, messages=messages)
            messages.append({"role": "assistant", "content": answer.content[0].text})
            messages.append({"role": "user", "content": "go on"})
    streamed = ""
    with client.messages.stream(model="stand-in", max_tokens=64, messages=messages) as stream:
        for text in stream.text_stream:
            streamed += text
    return {"streamed": streamed}


def openai_responses(base, http):
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-test-openai", max_retries=0, http_client=http)
    items = [{"role": "user", "content": "Why is the API slow?"}]
    for turn in range(1, TURNS + 1):
        # As the API answers them: the turn's calls, then their outputs.
        for c in calls_of(turn):
            items.append({"type": "function_call", "call_id": c, "name": "read_log", "arguments": json.dumps({"turn": turn})})
        for c in calls_of(turn):
            items.append({"type": "function_call_output", "call_id": c, "output": log_text(turn, c)})
        answer = client.responses.create(model="stand-in", input=items)
        items.append({"role": "assistant", "content": answer.output_text})
    chained = client.responses.create(model="stand-in", previous_response_id="resp_1", input=items)
    return {"chained": chained.output_text}


def openai_long(base, http):
    """50 turns, answers of ~1.5k tokens: the loop whose requests should
    keep the previous one as their prefix (the budget holds them)."""
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-test-openai", max_retries=0, http_client=http)
    messages = [{"role": "system", "content": "You are an operations agent."},
                {"role": "user", "content": "Watch the API for an hour."}]
    first = len(SENT)
    for turn in range(1, 51):
        calls = [f"long_{c}" for c in calls_of(turn)]
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": c, "type": "function", "function": {"name": "read_log", "arguments": json.dumps({"turn": turn})}}
            for c in calls]})
        for c in calls:
            messages.append({"role": "tool", "tool_call_id": c, "content": log_text(turn, c, 70)})
        answer = client.chat.completions.create(model="stand-in", messages=messages)
        messages.append({"role": "assistant", "content": answer.choices[0].message.content})
    return {"requests": [first, len(SENT)]}


def main():
    base, record = sys.argv[1], sys.argv[2]
    http = httpx2.Client(event_hooks={"request": [capture]}, timeout=60)
    report = {
        "openai_chat": openai_chat(base, http),
        "anthropic": anthropic_messages(base, http),
        "responses": openai_responses(base, http),
        "long": openai_long(base, http),
    }
    with open(record) as f:
        received = [json.loads(line) for line in f]
    report["sent"] = SENT
    report["received"] = received
    print(json.dumps(report))


main()
