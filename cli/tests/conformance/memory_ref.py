"""Runs memory_20250818 commands through the Anthropic Python SDK's reference implementation
(BetaLocalFilesystemMemoryTool), for burrow's memory conformance test.

Usage: python3 memory_ref.py BASE_DIR < input.json > results.json
input.json is {"symlinks": [[name, target], ...], "commands": [...]}: the symlinks are made
in the memory directory first (names relative to it, targets as given).
Each result is {"is_error": bool, "text": str} as the tool runner would post it; a command the
reference answers with an exception other than ToolError gives {"exception": name}.
"""

import json
import os
import sys

from anthropic.lib.tools._beta_functions import ToolError
from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool


def main():
    tool = BetaLocalFilesystemMemoryTool(base_path=sys.argv[1])
    given = json.load(sys.stdin)
    for name, target in given["symlinks"]:
        os.symlink(target, os.path.join(sys.argv[1], "memories", name))
    results = []
    for command in given["commands"]:
        try:
            results.append({"is_error": False, "text": tool.call(command)})
        except ToolError as e:
            results.append({"is_error": True, "text": str(e)})
        except Exception as e:  # noqa: BLE001 - recorded, compared as "some error"
            results.append({"exception": type(e).__name__})
    json.dump(results, sys.stdout)


main()
