"""The model reads offloaded history back through `lro history`, whose
files it cannot open itself: run by tests/command/history.rs against
chat_provider.py's scripted model `reader` (it calls lro_history_read on
the file holding turn 2's log, pattern `req_2_7 `, then says what it read).

    python read_back_client.py <lro history url>

Each agent below (the official `openai` and `anthropic` clients) keeps a
history of 6 turns of ~7k-token logs (over the 20k budget: the older
answers become pointers to files), then asks the model, in each format,
streamed and not. Prints one JSON report of what each client got back (the
text, and the names of any tool calls it was shown); asserts nothing.
"""

import json
import sys

import anthropic
import httpx2
import openai

TURNS = 6


def log_text(turn, call, lines=300):
    return "\n".join(
        f"2026-11-28T12:{turn:02d}:{i % 60:02d}Z INFO {call} req_{turn}_{i} GET /api/items/{i} took {i * 7 % 900}ms"
        for i in range(lines)
    )


def chat(client, stream):
    messages = [{"role": "user", "content": "Why is the API slow?"}]
    for turn in range(1, TURNS + 1):
        c = f"call_{turn}"
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": c, "type": "function", "function": {"name": "read_log", "arguments": json.dumps({"turn": turn})}}]})
        messages.append({"role": "tool", "tool_call_id": c, "content": log_text(turn, c)})
    tools = [{"type": "function", "function": {"name": "read_log", "parameters": {"type": "object"}}}]
    if not stream:
        answer = client.chat.completions.create(model="reader", messages=messages, tools=tools)
        m = answer.choices[0].message
        return {"text": m.content, "calls": [c.function.name for c in m.tool_calls or []]}
    text, calls = "", []
    for chunk in client.chat.completions.create(model="reader", messages=messages, tools=tools, stream=True):
        for choice in chunk.choices:
            text += choice.delta.content or ""
            calls += [c.function.name for c in choice.delta.tool_calls or [] if c.function and c.function.name]
    return {"text": text, "calls": calls}


def messages(client, stream):
    history = [{"role": "user", "content": "Why is the API slow?"}]
    for turn in range(1, TURNS + 1):
        c = f"toolu_{turn}"
        history.append({"role": "assistant", "content": [{"type": "tool_use", "id": c, "name": "read_log", "input": {"turn": turn}}]})
        history.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": c, "content": log_text(turn, c)}]})
    tools = [{"name": "read_log", "input_schema": {"type": "object"}}]
    if stream:
        with client.messages.stream(model="reader", max_tokens=64, messages=history, tools=tools) as s:
            message = s.get_final_message()
    else:
        message = client.messages.create(model="reader", max_tokens=64, messages=history, tools=tools)
    text = "".join(b.text for b in message.content if b.type == "text")
    return {"text": text, "calls": [b.name for b in message.content if b.type == "tool_use"]}


def responses(client):
    items = [{"role": "user", "content": "Why is the API slow?"}]
    for turn in range(1, TURNS + 1):
        c = f"call_{turn}"
        items.append({"type": "function_call", "call_id": c, "name": "read_log", "arguments": json.dumps({"turn": turn})})
        items.append({"type": "function_call_output", "call_id": c, "output": log_text(turn, c)})
    tools = [{"type": "function", "name": "read_log", "parameters": {"type": "object"}}]
    answer = client.responses.create(model="reader", input=items, tools=tools)
    calls = [i.name for i in answer.output if i.type == "function_call"]
    return {"text": answer.output_text, "calls": calls}


def main():
    base = sys.argv[1]
    http = httpx2.Client(timeout=60)
    oa = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-test-openai", max_retries=0, http_client=http)
    an = anthropic.Anthropic(base_url=base, api_key="sk-test-anthropic", max_retries=0, http_client=http)
    print(json.dumps({
        "chat": chat(oa, False),
        "chat_streamed": chat(oa, True),
        "messages": messages(an, False),
        "messages_streamed": messages(an, True),
        "responses": responses(oa),
    }))


main()
