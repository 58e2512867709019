"""The docs' generated pages and pictures: the HTTP API from the OpenAPI document the server
serves, the configuration from the code that reads it, the console's keys from its help screen,
and the console's pictures from the suite's own snapshots (``pytest --snapshot-update`` makes
them; docs/screenshot.py makes console.svg). They are committed, so that the Markdown reads
whole on GitHub as on the site: ``python docs/hooks.py`` writes them again, and
tests/test_docs.py fails while one is out of date. The MkDocs hook adds SECURITY.md as a page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = ROOT / "tests" / "__snapshots__" / "test_tui_snapshots"
PICTURES = (
    "test_session_detail",
    "test_session_detail_transcript_tab",
    "test_session_detail_changes_tab",
    "test_terminate_dialog_with_claims",
    "test_briefing",
    "test_bulk_pause_preview",
    "test_fleet_overview",
    "test_launch_dialog",
    "test_new_session_dialog",
    "test_session_list_grouped_with_a_group_folded",
)


def on_files(files: Files, config: Any) -> Files:
    # The repository's SECURITY.md, as it is.
    content = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "reporting.md", content=content))
    return files


def write_generated() -> list[Path]:
    """Every generated page and picture written into docs/; the paths that changed."""
    changed = []
    wanted = {ROOT / "docs" / uri: text.encode() for uri, text in generated_pages().items()}
    for name in PICTURES:
        wanted[ROOT / "docs" / "pictures" / f"{name}.svg"] = (
            SNAPSHOTS / f"{name}.svg"
        ).read_bytes()
    for path, content in wanted.items():
        if not path.exists() or path.read_bytes() != content:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
            changed.append(path)
    return changed


def generated_pages() -> dict[str, str]:
    return {
        "reference/http-api.md": http_reference(),
        "reference/configuration.md": configuration_reference(),
        "reference/keys.md": keys_reference(),
    }


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def http_reference() -> str:
    from roundtable_console.api.app import api_document, web_routes

    document = api_document()
    out = [
        "# HTTP API",
        "",
        "Generated from the OpenAPI document `roundtable serve` serves at "
        "`/api/v1/openapi.json` (with tokens in the store, to their holders). Every refusal is "
        "`application/problem+json` with a `code`; see the [security model](../security.md) "
        "for who may call what.",
        "",
    ]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            out += [f"## `{method.upper()} {path}`", "", operation.get("summary", ""), ""]
            parameters = operation.get("parameters", [])
            if parameters:
                out += [
                    "| parameter | in | required | schema | description |",
                    "| --- | --- | --- | --- | --- |",
                ]
                for parameter in parameters:
                    schema = json.dumps(parameter.get("schema", {}))
                    out.append(
                        f"| `{parameter['name']}` | {parameter['in']} | "
                        f"{'yes' if parameter.get('required') else 'no'} | `{_cell(schema)}` | "
                        f"{_cell(parameter.get('description', ''))} |"
                    )
                out.append("")
            body = operation.get("requestBody")
            if body:
                schema = body["content"]["application/json"]["schema"]
                fields = ", ".join(f"`{name}`" for name in schema.get("properties", {}))
                required = "required" if body.get("required") else "optional"
                out += [f"Body ({required}): a JSON object of {fields or 'no field'}.", ""]
            statuses = ", ".join(f"`{status}`" for status in operation.get("responses", {}))
            out += [f"Answers: {statuses}.", ""]
    out += [
        "## Outside the document",
        "",
        "The document itself, the workspace's WebSocket, and the web console's pages, fragments "
        "and actions (signed in with a cookie, not part of the API):",
        "",
        "| method | path |",
        "| --- | --- |",
    ]
    out += [f"| {method} | `{path}` |" for method, path in web_routes()]
    return "\n".join(out) + "\n"


def configuration_reference() -> str:
    from roundtable_console.store.writes.usage_values import DEFAULT_PRICES, PRICES_AS_OF
    from roundtable_console.tui.config import (
        ADAPTER_FLAG_KEYS,
        ADAPTER_TEXT_KEYS,
        ENVIRONMENT_HELP,
        SETTING_HELP,
        Settings,
    )

    out = [
        "# Configuration",
        "",
        "Generated from the code that reads it (`tui/config.py`). `config.toml` lives in "
        "`$XDG_CONFIG_HOME/roundtable/` (usually `~/.config/roundtable/`); a key it does not "
        "hold takes its default.",
        "",
        "## `config.toml`",
        "",
        "| key | default | what it does |",
        "| --- | --- | --- |",
    ]
    for name in Settings._fields:
        if name == "source":
            continue
        default = Settings._field_defaults.get(name)
        shown = "—" if default in (None, {}) or name == "adapters" else f"`{default}`"
        if name == "prices":
            shown = "the shipped prices (below)"
        out.append(f"| `{name}` | {shown} | {_cell(SETTING_HELP[name])} |")
    out += [
        "",
        "## `[adapters.NAME]`",
        "",
        "Also read from a workspace's `DIR/.roundtable/config.yaml` (the reference's format), "
        "which wins for that workspace.",
        "",
        "| key | kind |",
        "| --- | --- |",
    ]
    out += [f"| `{key}` | text |" for key in ADAPTER_TEXT_KEYS]
    out += [f"| `{key}` | true or false |" for key in ADAPTER_FLAG_KEYS]
    out += [
        "",
        '## `[prices."MODEL"]`',
        "",
        "Dollars per million tokens. A model takes the entry with the longest prefix of its "
        f"name. The shipped prices below are dated {PRICES_AS_OF} "
        "(`store/writes/usage_values.py`). They are estimates: check them against your "
        "vendor's price list. A table of the same prefix replaces one.",
        "",
        "| model prefix | input | output | cache_read | cache_write |",
        "| --- | --- | --- | --- | --- |",
    ]
    out += [
        f"| `{prefix}` | {price.input:g} | {price.output:g} | {price.cache_read:g} | "
        f"{price.cache_write:g} |"
        for prefix, price in DEFAULT_PRICES.items()
    ]
    out += ["", "## Environment", "", "| variable | what it does |", "| --- | --- |"]
    out += [f"| `{name}` | {_cell(words)} |" for name, words in ENVIRONMENT_HELP.items()]
    return "\n".join(out) + "\n"


def keys_reference() -> str:
    from roundtable_console.screens.help import KEYS

    out = ["# Console keys", "", "Generated from the console's help screen (`?`).", ""]
    for section, rows in KEYS:
        out += [f"## {section}", "", "| key | does |", "| --- | --- |"]
        out += [f"| `{_cell(key)}` | {_cell(does)} |" for key, does in rows]
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    for written in write_generated():
        print(f"wrote {written.relative_to(ROOT)}")
