"""What the interop clients share: a result as JSON for the Rust side, a
call whose failure is reported rather than raised, and the JSON of a
result's first text block."""

import json


def dump(result):
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def attempt(coro):
    try:
        return {"ok": dump(await coro)}
    except Exception as e:  # reported to the Rust side, which asserts
        return {"error": f"{type(e).__name__}: {e}"}


def first_text_json(result):
    """The JSON of the first text block of an `attempt` result, else None."""
    for block in result.get("ok", {}).get("content", []):
        if block.get("type") == "text":
            try:
                return json.loads(block["text"])
            except ValueError:
                return None
    return None
