"""What the agent drivers (run_claude.py, run_codex.py, run_gemini.py) share:
the scripted scenarios, starting a scripted model endpoint, reading its log."""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def scenario_turns(scenario: str, server: str, tool: str, args: dict, shell: str = "shell",
                   described: bool = False) -> list:
    """The model's script for a named scenario: the tool, then what it does
    with the result (`shell`: the agent's shell tool; `described`: its calls
    carry a `description`, as Claude Code's Bash asks)."""

    def run(command: str, description: str) -> dict:
        args = {"command": command, "description": description} if described else {"command": command}
        return {"tool": shell, "input": args, "optional": True}

    turns = [{"tool": f"mcp__{server}__{tool}", "input": args}]
    if scenario == "bash":
        turns += [run("tail -n +2 {file_path} | head -n 3", "peek"), run("{recipe_1}", "recipe 1")]
    elif scenario == "extract":
        turns += [
            {"tool": f"mcp__{server}__lro_extract", "input": {"file_path": "{file_path}", "recipe": 1}, "optional": True},
        ]
    elif scenario == "spill":
        turns += [run("head -c 3000 {spill_path}", "peek")]
    elif scenario != "call":
        sys.exit(f"unknown scenario {scenario}")
    return turns + [{"text": "done"}]


def start_model(model: str, script_path: str, log_path: str, err_path: str) -> tuple[subprocess.Popen, int]:
    """Starts the scripted model endpoint `model` (a script here) on a free
    port; returns it and the port."""
    proc = subprocess.Popen(
        [sys.executable, os.path.join(HERE, model), script_path, log_path, "0"],
        stdout=subprocess.PIPE,
        stderr=open(err_path, "w"),
        text=True,
        cwd=HERE,
    )
    line = proc.stdout.readline()
    if not line.startswith("LISTENING "):
        proc.kill()
        sys.exit(f"{model} did not start: {line!r}")
    return proc, int(line.split()[1])


def read_log(path: str) -> list:
    """The JSON lines of the model's request log (none when it is missing)."""
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out
