"""One label, one config: in any folder of shipped reports no two reports whose sidecars
name different kernel configs are drawn under the same label (issue: the retired mma.sync
kernel 7 and the wgmma kernel 7 both read "K7 auto-tuned")."""
import json
from pathlib import Path

import pytest

from flashprof.analysis.charts.identity import kernel_label, label_clashes
from flashprof.analysis.report.target_key import sidecar_key, stem_key

ROOT = Path(__file__).resolve().parents[1]


def _targets(folder: Path) -> dict[str, tuple[str, str | None]]:
    out = {}
    for rep in sorted(folder.glob("*.ncu-rep")):
        side_path = rep.with_suffix(".json")
        side = json.loads(side_path.read_text()) if side_path.is_file() else {}
        out[rep.stem] = (sidecar_key(side) or stem_key(rep.stem), side.get("config_slug"))
    return out


FOLDERS = sorted({p.parent for p in (ROOT / "reports").rglob("*.ncu-rep") if "history" not in p.parts})


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_two_configs_share_a_label(folder):
    assert label_clashes(_targets(folder)) == []


def test_the_h200_kernel7_forms_have_their_own_labels():
    t = _targets(ROOT / "reports" / "h200")
    (k7, slug7), (k7m, slugm) = t["kernel7"], t["kernel7mma"]
    assert "wgmma" in slug7.split("_") and "wgmma" not in slugm.split("_")
    assert kernel_label(k7) != kernel_label(k7m) and "mma.sync" in kernel_label(k7m)


def test_a_clash_is_found(tmp_path):
    """Two kernel-7 sidecars of different configs in one folder: the check names both."""
    for stem, slug in (("kernel7", "d128_a"), ("kernel7_s1024", "d128_b")):
        (tmp_path / f"{stem}.ncu-rep").write_bytes(b"")
        (tmp_path / f"{stem}.json").write_text(json.dumps({"target_key": "7", "config_slug": slug}))
    (msg,) = label_clashes(_targets(tmp_path))
    assert "d128_a (kernel7)" in msg and "d128_b (kernel7_s1024)" in msg and "K7 " in msg
