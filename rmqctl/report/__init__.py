"""Every command's output document, built in one place, and the rows ``jsonl``/``csv`` derive from it.

Runbooks depend on these shapes (docs/output.md): snake_case keys that mean the same thing with
the same value in every command, timestamps as epoch milliseconds in ``*_ts`` keys, lists kept as
lists, and an ``errors`` object (source → message) in every document. Each document is built here
from core objects (the model keeps no output dicts); each has a ``*_rows`` function returning its
:class:`RowSet`\\ s, one kind of row each, computed from the document alone, so ``json``,
``jsonl`` and ``csv`` can never disagree. The CLI renders these; the tests read them.

By command family: ``common`` (rows, errors, and the one JSON shape of a queue, subscription,
connection and finding), ``cluster`` (cluster and topics), ``group``, ``doctor``, ``emulator``
(and ``demo``), ``rebalance``, ``snapshot``, ``config`` and ``analyze``. The first five are
re-exported here (``cluster``'s and ``emulator``'s names load their module when first asked for);
the others are imported by the command that needs them (so the others' start-up does not pay for
them). A command that needs the doctor's findings runs the doctor
and hands them in: documents never run checks.

Must not import the CLI, the TUI, the doctor or pyspark.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

from rmqctl.report.common import (
    CONSUME_TYPES,
    Errors,
    QueueDict,
    RowSet,
    connection_doc,
    consume_type,
    error_rows,
    errors_doc,
    finding_doc,
    queue_doc,
    queue_labels,
    queues_doc,
    subscription_doc,
)
from rmqctl.report.doctor import (
    FINDING_COLUMNS,
    DoctorDoc,
    doctor,
    doctor_rows,
)
from rmqctl.report.group import (
    ASSIGNMENT_COLUMNS,
    CONNECTION_COLUMNS,
    GROUP_LIST_COLUMNS,
    PROGRESS_COLUMNS,
    PROGRESS_FIELDS,
    SUBSCRIPTION_CODES,
    GroupAssignmentDoc,
    GroupListDoc,
    GroupProgressDoc,
    GroupShowDoc,
    HeldTwiceDict,
    SubscriptionRow,
    assignment_rows,
    cached_note,
    compare_subscriptions,
    group_assignment,
    group_assignment_rows,
    group_list,
    group_list_rows,
    group_progress,
    group_progress_rows,
    group_show,
    group_show_rows,
    group_summary,
    progress_row,
    retotal_progress,
    subscription_conflicts,
    watched,
)

if _typing.TYPE_CHECKING:
    from rmqctl.report.cluster import (
        CLUSTER_COLUMNS,
        ROUTE_COLUMNS,
        STATUS_COLUMNS,
        TOPIC_LIST_COLUMNS,
        ClusterListDoc,
        TopicListDoc,
        TopicRouteDoc,
        TopicStatusDoc,
        cluster_list,
        cluster_list_rows,
        topic_list,
        topic_list_rows,
        topic_route,
        topic_route_rows,
        topic_status,
        topic_status_rows,
    )
    from rmqctl.report.emulator import (
        CLIENT_COLUMNS,
        MESSAGE_COLUMNS,
        SCENARIO_COLUMNS,
        DemoDoc,
        DemoGroupDoc,
        EmulatorRunDoc,
        clients,
        clients_rows,
        control_result,
        control_result_rows,
        demo_rows,
        emulator_run,
        emulator_run_rows,
        produced,
        produced_rows,
        scenario,
        scenario_rows,
        scenarios,
        scenarios_rows,
        served,
        state,
        state_rows,
    )

#: what the commands of clusters and topics, the emulator and demo read, loaded when first asked
#: for: the group commands' start-up does not pay for them
_LAZY: dict[str, str] = {
    name: module
    for module, names in {
        "rmqctl.report.cluster": (
            "CLUSTER_COLUMNS",
            "ROUTE_COLUMNS",
            "STATUS_COLUMNS",
            "TOPIC_LIST_COLUMNS",
            "ClusterListDoc",
            "TopicListDoc",
            "TopicRouteDoc",
            "TopicStatusDoc",
            "cluster_list",
            "cluster_list_rows",
            "topic_list",
            "topic_list_rows",
            "topic_route",
            "topic_route_rows",
            "topic_status",
            "topic_status_rows",
        ),
        "rmqctl.report.emulator": (
            "CLIENT_COLUMNS",
            "MESSAGE_COLUMNS",
            "SCENARIO_COLUMNS",
            "DemoDoc",
            "DemoGroupDoc",
            "EmulatorRunDoc",
            "clients",
            "clients_rows",
            "control_result",
            "control_result_rows",
            "demo_rows",
            "emulator_run",
            "emulator_run_rows",
            "produced",
            "produced_rows",
            "scenario",
            "scenario_rows",
            "scenarios",
            "scenarios_rows",
            "served",
            "state",
            "state_rows",
        ),
    }.items()
    for name in names
}


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    loaded = _importlib.import_module(module)
    globals().update({n: getattr(loaded, n) for n, m in _LAZY.items() if m == module})
    return getattr(loaded, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "ASSIGNMENT_COLUMNS",
    "CLIENT_COLUMNS",
    "CLUSTER_COLUMNS",
    "CONNECTION_COLUMNS",
    "CONSUME_TYPES",
    "ClusterListDoc",
    "DemoDoc",
    "DemoGroupDoc",
    "DoctorDoc",
    "EmulatorRunDoc",
    "Errors",
    "FINDING_COLUMNS",
    "GROUP_LIST_COLUMNS",
    "GroupAssignmentDoc",
    "GroupListDoc",
    "GroupProgressDoc",
    "GroupShowDoc",
    "HeldTwiceDict",
    "MESSAGE_COLUMNS",
    "PROGRESS_COLUMNS",
    "PROGRESS_FIELDS",
    "QueueDict",
    "ROUTE_COLUMNS",
    "RowSet",
    "SCENARIO_COLUMNS",
    "STATUS_COLUMNS",
    "SUBSCRIPTION_CODES",
    "SubscriptionRow",
    "TOPIC_LIST_COLUMNS",
    "TopicListDoc",
    "TopicRouteDoc",
    "TopicStatusDoc",
    "assignment_rows",
    "clients",
    "clients_rows",
    "cluster_list",
    "cluster_list_rows",
    "compare_subscriptions",
    "connection_doc",
    "consume_type",
    "control_result",
    "control_result_rows",
    "demo_rows",
    "doctor",
    "doctor_rows",
    "cached_note",
    "emulator_run",
    "emulator_run_rows",
    "error_rows",
    "errors_doc",
    "finding_doc",
    "group_assignment",
    "group_assignment_rows",
    "group_list",
    "group_list_rows",
    "group_progress",
    "group_progress_rows",
    "retotal_progress",
    "group_show",
    "group_show_rows",
    "group_summary",
    "produced",
    "produced_rows",
    "progress_row",
    "queue_doc",
    "queue_labels",
    "queues_doc",
    "scenario",
    "scenario_rows",
    "scenarios",
    "scenarios_rows",
    "served",
    "state",
    "state_rows",
    "subscription_conflicts",
    "subscription_doc",
    "topic_list",
    "topic_list_rows",
    "topic_route",
    "topic_route_rows",
    "topic_status",
    "topic_status_rows",
    "watched",
]
