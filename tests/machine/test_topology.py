"""One topology per build: `check` (the rules), `estimate` (the model) and `plan`/`upgrade` (the
planner's placement) agree on where every card sits and which PCIe link it gets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dlrig.catalog.loader import builtin_catalog
from dlrig.catalog.schema import CPU, GPU, Motherboard, PCIeSlot, Platform
from dlrig.enums import Modifier
from dlrig.machine import load_build
from dlrig.machine.document import build_to_document
from dlrig.machine.model import Build, GPUGroup
from dlrig.machine.topology import link_width, place_cards, topology
from dlrig.model.device import pcie_link
from dlrig.plan.assembles import place_gpus
from dlrig.rules.facts import Facts

EXAMPLES = Path(__file__).parents[2] / "examples" / "builds"

# The case: x16 slots at positions 1 (x16), 2 (x16) and 4 (x8), three 3-slot cards.
THREE_WIDE_CARDS = """\
name: three 3-slot cards on slots 1, 2, 4
gpus:
  - spec: {name: Wide card, memory_gb: 24, fp32_tflops: 80, fp16_tensor_tflops: 160,
           memory_bandwidth_gb_s: 1000, tdp_w: 300, pcie_gen: 4, pcie_lanes: 16, slots: 3,
           length_mm: 300}
    count: 3
cpu: AMD Ryzen Threadripper 7960X
motherboard:
  spec:
    name: Slots 1 2 4 board
    socket: sTR5
    memory_type: DDR5
    x16_slots:
      - {position: 1, lanes: 16, gen: 4}
      - {position: 2, lanes: 16, gen: 4}
      - {position: 4, lanes: 8, gen: 4}
memory: {size_gb: 128}
"""


def run_dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False
    )


def test_second_wide_card_runs_at_x8_in_check_and_in_estimate(tmp_path: Path) -> None:
    """The first card covers slots 1-3, so the second sits in slot 4 (x8) and the third finds
    no slot (MB.1). Before the one topology, `check` said x8 and `estimate` modelled x16."""
    path = tmp_path / "build.yaml"
    path.write_text(THREE_WIDE_CARDS)
    check = json.loads(run_dlrig("check", str(path), "--json").stdout)
    by_rule = {f["rule"]: f for f in check["findings"]}
    assert by_rule["MB.1"]["evidence"]["seated_at"] == [1, 4]
    assert by_rule["PCIE.1"]["evidence"]["lanes"] == [16, 8, 0]
    out = run_dlrig("estimate", str(path), "--workload", "resnet50", "--json")
    assert out.returncode == 0, out.stderr
    estimate = json.loads(out.stdout)
    assert estimate["device"]["pcie_lanes"] == 8
    assert Modifier.PCIE_DOWNGRADED.value in estimate["step"]["modifiers"]


def _seated_links(build: Build, group: int) -> list[tuple[int, int]]:
    """What the rules see: (gen, lanes) of the group's cards that found a slot."""
    facts = Facts(build)
    assert facts.links is not None
    return [
        (lk.gen, lk.lanes)
        for card, lk in zip(facts.cards, facts.links, strict=True)
        if card.group == group and lk.seated
    ]


def _agree(build: Build) -> None:
    """Rules, model and planner see the same seats and links on this build."""
    topo = topology(build)
    for g, group in enumerate(build.gpus):
        gen, lanes = pcie_link(build, group, [])
        seated = _seated_links(build, g) if topo.links is not None else []
        if seated:
            # The model paces the group by its slowest seated card, as the rules see it.
            assert (gen, lanes) == min(seated, key=lambda gl: (gl[1] * 2 ** gl[0], gl[1]))
    board = build.motherboard
    if board is not None and build.platform is None and len(build.gpus) == 1:
        group = build.gpus[0]
        planned = place_gpus(board, group.gpu, group.count)
        placement = topo.placement
        assert placement is not None
        if planned is None:
            assert placement.unplaced
        else:
            assert tuple(s.slot for s in placement.seats) == planned


def test_check_estimate_and_plan_agree_on_every_example_build() -> None:
    for path in sorted(EXAMPLES.iterdir()):
        _agree(load_build(path))


slot_lists = st.lists(
    st.tuples(st.integers(1, 8), st.sampled_from([4, 8, 16]), st.integers(3, 5), st.booleans()),
    min_size=1,
    max_size=5,
    unique_by=lambda t: t[0],
)


@settings(max_examples=150, deadline=None)
@given(
    slots=slot_lists,
    width=st.integers(1, 4),
    count=st.integers(1, 4),
    user_lanes=st.sampled_from([None, 4, 8]),
    cpu_lanes=st.sampled_from([16, 20, 24, 48, 128]),
)
def test_rules_model_and_planner_agree_on_random_boards(
    slots: list[tuple[int, int, int, bool]],
    width: int,
    count: int,
    user_lanes: int | None,
    cpu_lanes: int,
) -> None:
    catalog = builtin_catalog()
    base_gpu = catalog.find(GPU, "RTX 4090")
    gpu = base_gpu.model_copy(update={"slots": width})
    cpu = catalog.find(CPU, "Threadripper 7960X").model_copy(update={"pcie_lanes": cpu_lanes})
    board = catalog.find(Motherboard, "TRX50-SAGE").model_copy(
        update={
            "x16_slots": tuple(
                PCIeSlot(position=p, lanes=lanes, gen=gen, from_cpu=from_cpu)
                for p, lanes, gen, from_cpu in slots
            )
        }
    )
    build = Build(gpus=(GPUGroup(gpu, count, pcie_lanes=user_lanes),), cpu=cpu, motherboard=board)
    _agree(build)


def test_placement_leaves_a_covered_slot_empty() -> None:
    """MB.1: a card covers `width` positions; the next card takes the first slot below."""
    slots = [PCIeSlot(position=p, lanes=16, gen=4) for p in (1, 3, 5, 7)]
    seated, unplaced = place_cards(slots, [3, 3, 2])
    assert [(i, s.position, last) for i, s, last in seated] == [(0, 1, 3), (1, 5, 7)]
    assert unplaced == (2,)


def test_link_widths_are_powers_of_two() -> None:
    """PCIe trains at x16, x8, x4, x2 or x1: 24 lanes for one card is x16, 12 is x8."""
    assert [link_width(n) for n in (0, 1, 3, 12, 24)] == [0, 1, 2, 8, 16]


def test_saved_plan_build_and_its_file_have_the_same_topology(tmp_path: Path) -> None:
    """A build written to a file and read back seats its cards the same way."""
    build = load_build(EXAMPLES / "4x-blower-workstation.yaml")
    path = tmp_path / "again.yaml"
    path.write_text(yaml.safe_dump(build_to_document(build)))
    again = load_build(path)
    assert topology(again).links == topology(build).links
    assert topology(again).placement == topology(build).placement


def test_gpus_fill_one_cpu_sockets_share_before_the_next() -> None:
    """A dual-socket server wires its GPU positions evenly to its two CPUs (Supermicro
    SYS-421GE-TNRT: 10 positions, 5 a socket); a workstation has no second socket to reach, and
    a dual-socket board's slots do not say which CPU they hang off (taken at its best)."""
    catalog = builtin_catalog()
    gpu = catalog.find(GPU, "NVIDIA RTX A6000")
    server = catalog.find(Platform, "Supermicro SYS-421GE-TNRT")
    racked = topology(Build(name="8 in a server", gpus=(GPUGroup(gpu, 8),), platform=server))
    assert racked.gpus_per_cpu_socket == 5
    assert not racked.spans_cpu_sockets(5)
    assert racked.spans_cpu_sockets(6)
    desk = topology(Build(name="4 on a desk", gpus=(GPUGroup(gpu, 4),)))
    assert not desk.spans_cpu_sockets(4)
    slots = tuple(PCIeSlot(position=p, lanes=16, gen=4) for p in (1, 3, 5, 7))
    dual = Motherboard(name="Dual board", socket="SP3", memory_type="DDR4", memory_slots=16,
                       max_memory_gb=2048, x16_slots=slots, sockets=2)  # fmt: skip
    board = topology(Build(name="4 on two sockets", gpus=(GPUGroup(gpu, 4),), motherboard=dual))
    assert not board.spans_cpu_sockets(4)
