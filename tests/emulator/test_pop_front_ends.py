"""REPEATED_REDELIVERY in the front ends that poll round after round: the exporter and the TUI read
back each POP group's newest retry copies with the round (at most ``REDELIVERY_SAMPLE`` per retry
queue), so they report the failing group of ``pop-redelivery`` as ``rmqctl doctor`` does, and say
why the check is skipped when sampling is off."""

from __future__ import annotations

from typing import Any

from rmqctl.connect import Target, open_source
from rmqctl.doctor import skipped_checks
from rmqctl.doctor.checks import NOT_SAMPLED
from rmqctl.exporter.rounds import RoundMaker
from rmqctl.watch import REDELIVERY_SAMPLE, Watcher
from tests.tui.helpers import wait_for
from tui import TuiSettings, make_app

GROUPS = ["audit-pop", "order-pop"]


def loop_numbers(evidence: Any) -> tuple[int, int, int, int]:
    return (evidence["messages"], evidence["highest_delivery"], evidence["max_deliveries"],
            evidence["deliveries_left"])


async def test_the_exporter_reports_the_failing_pop_group_on_its_way_to_the_dlq() -> None:
    async with open_source(Target(emulator="pop-redelivery")) as opened:
        result = await RoundMaker(opened.source, GROUPS).take()
    found = {(f.group, f.code): f for f in result.findings}
    # the four "bad" messages, delivered four times of five (retryMaxTimes 4): the doctor's numbers
    assert loop_numbers(found[("order-pop", "REPEATED_REDELIVERY")].evidence) == (4, 4, 5, 1)
    assert found[("order-pop", "REPEATED_REDELIVERY")].evidence["retry_topics"] == ["%RETRY%order-pop_OrderTopic"]
    assert [code for group, code in found if group == "audit-pop"] == []
    view = result.groups["order-pop"].view
    assert view is not None and "REPEATED_REDELIVERY" not in skipped_checks(view)
    # bounded: one pull's worth of copies per retry queue at most
    assert all(len(s.messages) <= REDELIVERY_SAMPLE for s in view.retry_samples.values())


async def test_without_sampling_the_exporter_lists_repeated_redelivery_as_skipped_and_says_why() -> None:
    async with open_source(Target(emulator="pop-redelivery")) as opened:
        result = await RoundMaker(opened.source, GROUPS, sample_tags=False).take()
    assert "REPEATED_REDELIVERY" not in {f.code for f in result.findings}
    view = result.groups["order-pop"].view
    assert view is not None and view.retry_samples == {}
    assert skipped_checks(view)["REPEATED_REDELIVERY"] == NOT_SAMPLED


async def test_a_watcher_reads_retry_copies_only_of_pop_groups_with_retry_messages() -> None:
    async with open_source(Target(emulator="pop-redelivery")) as opened:
        rnd = await Watcher(opened.source, GROUPS, retry_copies=True).poll()
        plain = await Watcher(opened.source, GROUPS).poll()
    assert {g: sorted({mq.topic for mq in v.retry_samples}) for g, v in rnd.current.views.items()} == {
        "audit-pop": [], "order-pop": ["%RETRY%order-pop_OrderTopic"]}
    assert all(not v.retry_samples for v in plain.current.views.values())


async def test_the_tui_shows_repeated_redelivery_for_the_failing_pop_group() -> None:
    async with open_source(Target(emulator="pop-redelivery")) as opened:
        app = make_app(opened, TuiSettings(interval=3600))
        async with app.run_test(size=(160, 40)) as pilot:
            await wait_for(pilot, lambda: app.polls_done >= 1 and "order-pop" in app.dashboard.findings)
            by_group = {g: [f.code for f in fs] for g, fs in app.dashboard.findings.items()}
    assert "REPEATED_REDELIVERY" in by_group["order-pop"]
    (loop,) = [f for f in app.dashboard.findings["order-pop"] if f.code == "REPEATED_REDELIVERY"]
    assert loop_numbers(loop.evidence) == (4, 4, 5, 1)
    assert by_group["audit-pop"] == []
