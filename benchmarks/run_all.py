"""Run every benchmark side by side and write ``benchmarks/results.md``.

Each benchmark runs as its own process on this machine, with its baselines and peers in the
same run; the report keeps medians and ratios, never single times, and checks each figure
against the project's goals. ``make bench`` runs this in the benchmark venv, where the peers
(pydantic-ai, openai-agents, pydantic) are installed from requirements/bench.txt.

    python benchmarks/run_all.py [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import goals

HERE = Path(__file__).resolve().parent
BENCHES = (
    "bench_loop",
    "bench_stream",
    "bench_boundary",
    "bench_sse",
    "bench_providers",
    "bench_socket",
    "bench_anthropic",
    "bench_responses",
    "bench_gemini",
    "bench_coding",
    "bench_sandbox",
    "bench_agent",
    "bench_session",
    "bench_import",
    "bench_cli_startup",
    "bench_render",
    "bench_scale",
)


def run_bench(name: str, quick: bool) -> dict[str, Any] | None:
    """The figures of one benchmark, run as its own process; ``None`` if it failed (its
    output says why, and the report names it)."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / f"{name}.json"
        command = [sys.executable, str(HERE / f"{name}.py"), "--json-out", str(out)]
        if quick:
            command.append("--quick")
        env = {**os.environ, "PYTHONASYNCIODEBUG": "", "PYTHONDEVMODE": ""}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as on an installed package
        print(f"\n=== {name}", flush=True)
        if subprocess.run(command, check=False, env=env).returncode != 0:
            print(f"FAILED: {name} (its output is above)", file=sys.stderr, flush=True)
            return None
        return json.loads(out.read_text(encoding="utf-8"))


def render_goals(figures: dict[str, dict[str, Any] | None]) -> list[str]:
    """Every goal of every benchmark in one table: met, missed or SKIPPED (with why)."""
    lines = [
        "## Goals",
        "",
        "Each figure is measured several times in this run (a ratio of tether to its baseline "
        "in the same round, or milliseconds above one); the median decides. A goal whose "
        "baseline could not run is SKIPPED, with the reason.",
        "",
        "| goal | script | min / median / max | repeats | target | |",
        "|---|---|---|---:|---|---|",
    ]
    counts = {"met": 0, "missed": 0, "SKIPPED": 0, "FAILED": 0}
    for name, result in figures.items():
        if result is None:
            counts["FAILED"] += 1
            lines.append(f"| every goal of `{name}` | `{name}` | — | 0 | — | FAILED |")
            continue
        for goal in result.get("goals", []):
            status = goal["status"]
            counts[status] += 1
            if status == "SKIPPED":
                shown = f"SKIPPED: {goal['why']}"
                repeats = "0"
            else:
                shown = status if status == "met" else "**missed**"
                repeats = str(len(goal["samples"]))
            lines.append(
                f"| {goal['what']} | `{name}` | {goals.spread(goal)} | {repeats} | "
                f"{goal['target']} | {shown} |"
            )
    lines += [
        "",
        f"{counts['met']} met, {counts['missed']} missed, {counts['SKIPPED']} skipped"
        + (f", {counts['FAILED']} benchmarks failed" if counts["FAILED"] else "")
        + ".",
        "",
    ]
    return lines


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}"


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def render(figures: dict[str, Any], quick: bool) -> str:
    lines = [
        "# tether benchmarks",
        "",
        f"- date: {datetime.date.today().isoformat()}",
        f"- machine: {machine()}",
        f"- Python: {platform.python_implementation()} {platform.python_version()}",
        f"- mode: {'quick' if quick else 'full'} (`make bench`); interleaved rounds, CPU time"
        " unless noted; the machines are shared and noisy, so read ratios, not times",
        "",
        *render_goals(figures),
    ]
    for section in (render_details, render_socket_section):
        try:
            lines += section(figures)
        except (KeyError, TypeError) as error:  # a benchmark failed: its section is missing
            lines += ["", f"(a section is missing: {type(error).__name__} {error})"]
    return "\n".join(lines) + "\n"


def stream_section(api: str, sdk: str, figures: dict[str, Any]) -> list[str]:
    """The text and tool workloads of a stream benchmark (``bench_anthropic``,
    ``bench_responses``): tether next to the floor and the SDK accumulator."""
    lines = [
        "",
        f"## {api} stream → ModelResponse (in memory)",
        "",
        f"| workload | tether / json.loads floor | {sdk} / tether |",
        "|---|---:|---:|",
    ]
    for name in ("text", "tool"):
        row = figures[name]["ratios"]
        sdk_ratio = row.get("sdk/tether")
        shown = "SKIPPED: SDK not installed" if sdk_ratio is None else f"{sdk_ratio:.2f}"
        lines.append(f"| {name} | {row['tether/floor']:.2f} | {shown} |")
    return [*lines, "", "Goal ≥ 3x faster than the SDK accumulator."]


def render_socket_section(figures: dict[str, Any]) -> list[str]:
    return render_socket(figures["bench_socket"])


def render_details(figures: dict[str, Any]) -> list[str]:
    loop = figures["bench_loop"]
    stream = figures["bench_stream"]
    boundary = figures["bench_boundary"]
    imports = figures["bench_import"]
    scale = figures["bench_scale"]
    steps = loop["us_per_step"]
    ratios = loop["ratios"]
    peers = [name for name in ("pydantic-ai", "openai-agents") if name in steps]
    lines = [
        "## Loop overhead (32 tool turns + 1 text turn, fully offline)",
        "",
        "| contender | µs per model step | tether / contender |",
        "|---|---:|---:|",
    ]
    for name, value in steps.items():
        if name == "tether-factories":
            ratio = f"{steps['tether'] / value:.3f}"
        else:
            ratio = "1.000" if name == "tether" else f"{ratios[f'tether/{name}']:.3f}"
        lines.append(f"| {name} | {value:,.1f} | {ratio} |")
    fastest_peer = min((steps[name] for name in peers), default=None)
    lines.append("")
    if fastest_peer is not None:
        ok = steps["tether"] <= fastest_peer / 10
        lines.append(
            f"Goal ≤ 1/10 of the faster peer: tether/peer = {steps['tether'] / fastest_peer:.3f}"
            f" — {verdict(ok)}."
        )
    else:
        lines.append("Peers not installed: run `make bench` (it installs them in .venv-bench).")
    floor_ratio = ratios["tether/floor"]
    factory_ratio = ratios["tether-factories/floor"]
    lines += [
        f"Goal ≤ 3x the bare-asyncio floor: tether/floor = {floor_ratio:.2f} with plain-data "
        f"replies — {verdict(floor_ratio <= 3)}; {factory_ratio:.2f} with async-generator "
        f"factories built from the public constructors — {verdict(factory_ratio <= 3)}.",
        "",
        "## EventStream (ns per event, CPU)",
        "",
        "| scenario | contender | ns/event | EventStream / contender |",
        "|---|---|---:|---:|",
    ]
    for scenario in ("batch", "interleaved"):
        values = stream[scenario]["cpu_ns"]
        for name, value in values.items():
            ratio = values["EventStream"] / value
            lines.append(f"| {scenario} | {name} | {value:,.1f} | {ratio:.2f} |")
    batch = stream["batch"]["cpu_ns"]
    stream_ratio = batch["EventStream"] / batch["async generator"]
    lines += [
        "",
        f"Goal ≤ 2x the bare async generator (batch): {stream_ratio:.2f} — "
        f"{verdict(stream_ratio <= 2)}.",
        "",
        f"## Provider boundary ({boundary['records']:,} records, records per CPU second)",
        "",
        "| contender | records/s | tether / contender |",
        "|---|---:|---:|",
    ]
    rates = boundary["records_per_second"]
    for name, value in rates.items():
        lines.append(f"| {name} | {value:,.0f} | {rates['tether'] / value:.3f} |")
    json_ratio = rates["tether"] / rates["baseline"]
    lines += [
        "",
        "`tether` parses the JSON text itself (`FixtureProviderAdapter.from_json`); "
        "`tether (dict)` deep-snapshots an already parsed dict (the constructor).",
        "",
        f"Goal within 3x of json.loads + dict access (throughput ratio ≥ 0.333): "
        f"{json_ratio:.3f} — {verdict(json_ratio >= 1 / 3)}.",
    ]
    if "pydantic" in rates:
        pydantic_ratio = rates["tether"] / rates["pydantic"]
        lines.append(
            f"Goal faster than pydantic (ratio > 1): {pydantic_ratio:.3f} — "
            f"{verdict(pydantic_ratio > 1)}."
        )
    sse = figures["bench_sse"]
    lines += [
        "",
        f"## SSE decoder ({sse['events']:,} OpenAI-like events, {sse['bytes'] / 1e6:.2f} MB)",
        "",
        "| feed size | baseline MB/s | SSEDecoder MB/s | SSEDecoder / baseline CPU time |",
        "|---|---:|---:|---:|",
    ]
    for size in ("1KiB", "16KiB"):
        row = sse[size]
        lines.append(
            f"| {size} | {row['baseline']['mb_per_s']:,.1f} | "
            f"{row['SSEDecoder']['mb_per_s']:,.1f} | {row['ratio']:.2f} |"
        )
    providers = figures["bench_providers"]
    provider_ms = providers["ms"]
    provider_ratios = providers["ratios"]
    linearity = providers["linearity"]
    lines += [
        "",
        "The baseline splits on blank lines and parses lines with no spec rules (no CR, BOM,"
        " comments, caps).",
        "",
        f"## OpenAI stream → ModelResponse ({providers['stream']['bytes'] / 1e6:.2f} MB, "
        f"{providers['stream']['events']:,} events, in memory)",
        "",
        "| contender | ms (CPU) |",
        "|---|---:|",
    ]
    for name, value in provider_ms.items():
        lines.append(f"| {name} | {value:,.1f} |")
    floor_ratio_p = provider_ratios["tether/floor"]
    lines += [
        "",
        f"Goal ≤ 2x `json.loads` of each payload alone: tether/floor = {floor_ratio_p:.2f} — "
        f"{verdict(floor_ratio_p <= 2)}.",
    ]
    if "sdk/tether" in provider_ratios:
        sdk = provider_ratios["sdk/tether"]
        lines.append(
            f"Goal ≥ 3x faster than the openai SDK accumulator: {sdk:.1f}x — {verdict(sdk >= 3)}."
        )
    per_byte = linearity["per_argument_byte"]
    lines += [
        f"Tool-call assembly, 10,000 vs 100 argument fragments, cost per argument byte: "
        f"{per_byte:.2f} (goal ≤ 1.5 — {verdict(per_byte <= 1.5)}; the json.loads floor alone "
        f"scores {linearity['floor_per_argument_byte']:.2f}, the parser adds "
        f"{linearity['parser_us_per_fragment']:.1f} µs per fragment).",
    ]
    lines += stream_section("Anthropic", "anthropic SDK", figures["bench_anthropic"])
    lines += stream_section("OpenAI Responses", "openai SDK", figures["bench_responses"])
    lines += render_gemini(figures["bench_gemini"])
    coding = figures["bench_coding"]
    lines += [
        "",
        f"## Coding tools on a {coding['files']:,}-file tree (wall ms, CLI tools as processes)",
        "",
        "| task | contender | ms | tether / contender |",
        "|---|---|---:|---:|",
    ]
    for task, values in coding["ms"].items():
        for name, value in values.items():
            ratio = "1.00" if name == "tether" else f"{values['tether'] / value:.2f}"
            lines.append(f"| {task} | {name} | {value:,.1f} | {ratio} |")
    agent = figures["bench_agent"]
    lines += [
        "",
        "## Stateful Agent vs a bare run_agent_loop (µs per model step, CPU)",
        "",
        "| workload | bare loop | Agent | Agent / bare |",
        "|---|---:|---:|---:|",
    ]
    for name, label in (("one_run", "1 prompt, 32 tool turns"), ("conversation", "40 prompts")):
        row = agent[name]
        values = row["us_per_step"]
        lines.append(
            f"| {label} | {values['bare']:,.1f} | {values['agent']:,.1f} | "
            f"{row['agent/bare']:.2f} |"
        )
    worst = max(agent["one_run"]["agent/bare"], agent["conversation"]["agent/bare"])
    per_event = agent["us_per_event_by_subscribers"]
    lines += [
        "",
        f"Goal Agent ≤ 1.5x the bare loop per turn: worst {worst:.2f} — {verdict(worst <= 1.5)}."
        " Publishing one event costs "
        + ", ".join(f"{value:.1f} µs with {count}" for count, value in per_event.items())
        + " subscribers (linear in subscribers).",
    ]
    session = figures["bench_session"]
    lines += [
        "",
        "## Session files (append-only JSONL, wall time for appends, CPU for loads)",
        "",
        "| entries | MB | baseline appends/s | tether appends/s | baseline / tether | "
        "json.loads ms | SessionStore.load ms | load / json.loads |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for append, load in zip(session["append"], session["load"], strict=True):
        lines.append(
            f"| {append['entries']:,} | {append['megabytes']:.1f} | "
            f"{append['baseline_per_s']:,.0f} | {append['tether_per_s']:,.0f} | "
            f"{append['ratio']:.2f} | {load['baseline_ms']:,.1f} | {load['tether_ms']:,.1f} | "
            f"{load['ratio']:.2f} |"
        )
    large = session["large"]
    lines += [
        "",
        "The baseline appends each record with one `os.write` to an `O_APPEND` file and an "
        "`os.fsync`, both on a worker thread awaited from the event loop as tether's are "
        '(see benchmarks/README.md, "Session appends and fsync"), and loads with `json.loads` '
        "of every line. "
        f"Goal appends within 2x of it at every size: worst {session['append_worst_ratio']:.2f} "
        f"— {verdict(session['append_worst_ratio'] <= 2)}. "
        f"Goal load ≤ 2x: worst {session['load_worst_ratio']:.2f} "
        f"— {verdict(session['load_worst_ratio'] <= 2)}. "
        f"One append of a 1 MiB tool result: {large['tether_ms']:.1f} ms "
        f"(baseline {large['baseline_ms']:.1f} ms).",
    ]
    startup = figures["bench_cli_startup"]
    lines += [
        "",
        "## CLI startup (fresh processes, wall time)",
        "",
        "| command | ms | goal ms | |",
        "|---|---:|---:|---|",
    ]
    for label, row in startup.items():
        if label == "goals":
            continue
        goal = row.get("goal_ms")
        shown = "" if goal is None else f"{goal:.0f}"
        state = "" if goal is None else verdict(row["ms"] <= goal)
        lines.append(f"| `{label}` | {row['ms']:.1f} | {shown} | {state} |")
    lines += [
        "",
        "## Import (fresh processes, wall time)",
        "",
        "| statement | ms | x `python -c pass` | ms above |",
        "|---|---:|---:|---:|",
    ]
    for label, row in imports.items():
        if label == "goals":
            continue
        lines.append(
            f"| `{label}` | {row['ms']:.1f} | {row['ratio']:.2f} | {row['above_ms']:+.1f} |"
        )
    above = imports["import tether"]["above_ms"]
    everything = imports["tether (all layers)"]["above_ms"]
    lines += [
        "",
        f"Goal `import tether` ≤ 50 ms above `python -c pass`: {above:+.1f} ms — "
        f"{verdict(above <= 50)}. Loading every layer (asyncio included) costs {everything:+.1f}"
        " ms.",
        "",
        "## Scale (concurrent 8-step runs on one event loop, wall time)",
        "",
        "| collector | runs | wall s | µs per run | peak RSS MiB | RSS added by the runs MiB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in scale["rows"]:
        per_run = row["wall_s"] / row["runs"] * 1e6
        lines.append(
            f"| {row.get('setting', 'default')} | {row['runs']:,} | {row['wall_s']:.2f} | "
            f"{per_run:,.0f} | {row['peak_rss_mib']:.1f} | {row['added_rss_mib']:.1f} |"
        )
    growth = scale["growth"]
    lines += [
        "",
        f"From {scale['rows'][0]['runs']:,} to {scale['rows'][-1]['runs']:,} runs "
        f"({growth['size_factor']:.0f}x) under `relaxed_cycle_collector()`: wall "
        f"{growth['wall_factor']:.1f}x, RSS added by the runs {growth['added_rss_factor']:.1f}x. "
        "Goal memory linear in concurrent runs: "
        f"{verdict(growth['added_rss_factor'] <= growth['size_factor'] * 1.25)}.",
    ]
    if "growth_default" in scale:
        lines.append(
            f"With the default collector settings (informational): wall "
            f"{scale['growth_default']['wall_factor']:.1f}x."
        )
    lines.append("")
    return lines


def render_gemini(gemini: dict[str, Any]) -> list[str]:
    """The Gemini section: tether against the floor and the SDK, per workload."""
    lines = [
        "",
        "## Gemini stream → ModelResponse (in memory)",
        "",
        "| workload | tether / json.loads floor | google-genai SDK / tether |",
        "|---|---:|---:|",
    ]
    for name in ("recorded", "text", "tool"):
        result = gemini[name]
        if result is None:
            lines.append(f"| {name} | SKIPPED: no recordings | |")
            continue
        row = result["ratios"]
        sdk_ratio = row.get("sdk/tether")
        shown = "SKIPPED: SDK not installed" if sdk_ratio is None else f"{sdk_ratio:.2f}"
        lines.append(f"| {name} | {row['tether/floor']:.2f} | {shown} |")
    lines += [
        "",
        "Goal ≥ 3x faster than the SDK turning each event into its objects.",
    ]
    return lines


def render_socket(socket: dict[str, Any]) -> list[str]:
    """The socket-path section: µs per chunk over a real loopback connection, per mode."""
    per_chunk = socket["us_per_chunk"]
    names = list(per_chunk["burst"])
    lines = [
        "",
        f"## OpenAI stream over a loopback socket ({socket['chunks']:,} text chunks, "
        "µs per chunk, CPU of the client)",
        "",
        f"| contender | paced (an event every {socket['pace_ms']:.1f} ms) | burst (one write) |",
        "|---|---:|---:|",
    ]
    for name in names:
        lines.append(
            f"| {name} | {per_chunk['paced'][name]:,.1f} | {per_chunk['burst'][name]:,.1f} |"
        )
    lines.append("")
    for mode in ("paced", "burst"):
        row = socket["ratios"][mode]
        text = (
            f"{mode}: tether / raw socket = {row['tether/raw']:.1f}x, tether / httpx2 read = "
            f"{row['tether/httpx2']:.2f}x"
        )
        if "sdk/tether" in row:
            sdk, own = row["sdk/tether"], row["sdk own/tether own"]
            if mode == "paced":
                text += (
                    f"; openai SDK / tether = {sdk:.2f}x (bounded by openai SDK / httpx2 read "
                    f"= {row['sdk/httpx2']:.2f}x); the SDK's CPU per event above httpx2's read "
                    f"/ tether's = {own:.2f}x (goal ≥ 5 — {verdict(own >= 5)})"
                )
            else:
                text += f"; openai SDK / tether = {sdk:.2f}x (goal ≥ 5 — {verdict(sdk >= 5)})"
        lines.append(text + ".")
    lines += [
        "",
        "Paced, a read per event: most of every client's cost is httpx2's own read path "
        "(the `httpx2 read` row, which tether and the SDK both pay), so the plain SDK ratio "
        "there is bounded by `openai SDK / httpx2 read` and the paced goal compares what each "
        "client adds above that read; burst shows what each adds per chunk.",
    ]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="quick variants of every bench")
    options = parser.parse_args(argv)
    figures = {name: run_bench(name, options.quick) for name in BENCHES}
    report = render(figures, options.quick)
    (HERE / "results.md").write_text(report, encoding="utf-8")
    print()
    print(report)
    failed = [name for name, result in figures.items() if result is None]
    if failed:
        raise SystemExit(f"benchmarks failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
