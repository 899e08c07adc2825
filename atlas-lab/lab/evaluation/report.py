"""Readable tables and the plot of an ``eval_recall`` report."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _line(name: str, s: dict[str, Any]) -> str:
    return (
        f"  {name:<22} n={s['n']:>4}  R@1 {s['r@1']:.3f}  R@5 {s['r@5']:.3f}  "
        f"R@10 {s['r@10']:.3f}  MRR {s['mrr']:.3f}"
    )


def tables(report: dict[str, Any]) -> list[str]:
    out = [
        f"backend {report['config']['backend']}, embedder {report['config']['embedder']}, "
        f"reranker {report['config']['reranker']}, k={report['k']}"
    ]
    full = report["ablations"]["full"]
    out.append("full pipeline")
    out.append(_line("overall", full["overall"]))
    for title in ("per_corpus", "per_corpus_kind", "per_persona", "per_type", "per_kind"):
        out.append(title.replace("_", " "))
        out.extend(_line(name, s) for name, s in full[title].items())
    out.append("ablations (overall)")
    out.extend(_line(name, a["overall"]) for name, a in report["ablations"].items())
    corpora = list(full.get("per_corpus", {}))
    if len(corpora) > 1:
        for corpus in corpora:
            out.append(f"ablations ({corpus})")
            out.extend(
                _line(name, a["per_corpus"][corpus]) for name, a in report["ablations"].items()
            )
    versus = report.get("versus_full") or {}
    if versus:
        out.append("full vs each ablation: questions only full finds +, only the ablation -, (p)")
        for name, cuts in versus.items():
            cells = "  ".join(
                f"R@{c['k']} +{c['better']} -{c['worse']} ({c['p']:.2f})" for c in cuts
            )
            out.append(f"  {name:<22} {cells}")
    leak = report["leakage"]
    out.append(f"leakage: {leak['leaks']} leaks in {leak['probes']} cross-user/tenant probes")
    out.extend(f"note: {n}" for n in report.get("notes", []))
    return out


def path_table(paths: dict[str, dict[str, Any]]) -> list[str]:
    """The full pipeline per corpus (and corpus/kind) on each path, side by side."""
    names = list(paths)
    out = ["paths side by side (full pipeline): R@5 / R@10 / MRR"]
    out.append(f"  {'':<30}" + "".join(f"{n:>24}" for n in names))
    rows = list(next(iter(paths.values()))["per_corpus"])
    rows += list(next(iter(paths.values()))["per_corpus_kind"])
    for row in rows:
        cells = []
        for name in names:
            figures = paths[name]["per_corpus"].get(row) or paths[name]["per_corpus_kind"].get(row)
            cells.append(
                f"{figures['r@5']:.3f} / {figures['r@10']:.3f} / {figures['mrr']:.3f}"
                if figures
                else "-"
            )
        out.append(f"  {row:<30}" + "".join(f"{c:>24}" for c in cells))
    out.append("  leaks" + " " * 25 + "".join(f"{paths[n]['leaks']:>24}" for n in names))
    return out


def overlap_tables(overlap: dict[str, Any]) -> list[str]:
    o = overlap["overall"]
    out = [f"question/target lexical overlap: mean {o['mean']} median {o['median']} max {o['max']}"]
    for corpus, kinds in overlap.get("corpora", {}).items():
        cells = "  ".join(f"{k} n={v['n']} mean {v['mean']:.2f}" for k, v in kinds.items())
        out.append(f"  corpus {corpus}: {cells}")
    for name, p in overlap["personas"].items():
        out.append(
            f"  {name:<16} n={p['n']:>3} mean {p['mean']:.3f} median {p['median']:.3f} "
            f"max {p['max']:.3f}"
        )
        out.extend(
            f"      {w['overlap']:.2f} {w['id']} ({w['kind']}): {w['question']}" for w in p["worst"]
        )
    return out


def plot(report: dict[str, Any], path: str) -> None:
    """Ablation bars (R@1/5/10, MRR) and per-type / per-kind bars of the full pipeline."""
    try:
        import matplotlib
    except ImportError as exc:  # a dev extra: the default install has no plotting
        raise RuntimeError(
            "--plot needs matplotlib: pip install -e '.[dev]' (or pip install matplotlib)"
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = ("r@1", "r@5", "r@10", "mrr")
    full = report["ablations"]["full"]
    panels: list[tuple[str, dict[str, Any]]] = [
        ("ablations", {n: a["overall"] for n, a in report["ablations"].items()}),
        ("full pipeline per corpus", full.get("per_corpus") or {"all": full["overall"]}),
        (
            "full pipeline per corpus / question kind",
            full.get("per_corpus_kind") or full["per_kind"],
        ),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(20, 5.2), gridspec_kw={"width_ratios": [3, 1.4, 4]})
    for ax, (title, groups) in zip(axes, panels, strict=True):
        names = list(groups)
        width = 0.8 / len(metrics)
        for i, metric in enumerate(metrics):
            xs = [n + (i - 1.5) * width for n in range(len(names))]
            ax.bar(xs, [groups[g][metric] for g in names], width, label=metric.upper())
        ax.set_xticks(
            range(len(names)),
            [f"{g}\n(n={groups[g]['n']})" for g in names],
            rotation=30,
            ha="right",
            rotation_mode="anchor",
            fontsize=8,
        )
        ax.set_ylim(0, 1.05)
        ax.axhline(0.85, color="grey", linestyle="--", linewidth=0.8)
        ax.set_title(title, fontsize=10)
    axes[0].legend(fontsize=8, loc="lower left")
    config = report["config"]
    fig.suptitle(
        f"Atlas recall eval: backend {config['backend']}, {config['questions']} questions, "
        f"leaks {report['leakage']['leaks']} (dashed: R@10 gate 0.85)",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


Writer = Callable[[str], None]
