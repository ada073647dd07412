"""Capture golden response frames from a real RocketMQ name server and broker.

Sends hand-built JSON-header request frames (see ``realcluster.encode_request``) and stores every
raw response frame - all bytes, including the 4-byte length prefix - as ``tests/golden/<name>.bin``.
Also writes ``tests/golden/manifest.json`` (machine-readable: request, response code, header type,
lengths) and ``tests/golden/README.md`` (the same, for people).

Scenario set up before capturing: topic ``GoldenTopic`` (4 queues), group ``GoldenGroup`` with one
real Java push consumer (instance ``golden_consumer``, so client id ``127.0.0.1@golden_consumer``)
subscribing ``tagA || tagB``; 4 tagA (one per queue), 2 tagB (queues 0, 1) and 1 tagC (queue 2,
filtered out) messages produced and consumed, offsets committed.

Usage (from the repository root)::

    python -m tests.harness.capture_golden                 # starts its own cluster(s)
    python -m tests.harness.capture_golden --namesrv 127.0.0.1:9876 --broker 127.0.0.1:10911 \\
        --broker-name broker-a --cluster-name DefaultCluster
    python tests/harness/capture_golden.py --out /tmp/golden --no-binary
    # 4.9.7 set, from a copy of the harness built with -Prmq49:
    python -m tests.harness.capture_golden --classpath '/tmp/h49/target/classes:/tmp/h49/target/lib/*' \
        --maven-version 4.9.7 --out tests/golden/rmq-4.9.7

With ``--namesrv``/``--broker`` an already running cluster is used (topic created with request 17);
the ROCKETMQ-binary-header files come from binary-header requests on 4.x servers (they mirror the
request's type) and, on 5.x, from a second throw-away cluster started with
``-Drocketmq.serialize.type=ROCKETMQ``; ``--no-binary`` skips them.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make "tests.harness" importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.harness.realcluster import (
    RawResponse,
    RealCluster,
    ScenarioClientsProcess,
    raw_request,
    wait_until,
)

TOPIC = "GoldenTopic"
GROUP = "GoldenGroup"
INSTANCE = "golden_consumer"
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "golden"


class Capturer:
    """Sends requests, writes the raw response frames and remembers what was sent."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.entries: list[dict[str, Any]] = []

    def capture(self, name: str, addr: str, target: str, code: int, ext: Mapping[str, Any] | None = None,
                *, version: int = 479, serialize: str = "JSON", note: str = "", expect: int | None = 0,
                server_version: str | None = None) -> RawResponse:
        """Send one request to ``addr`` and store the response frame as ``<name>.bin``."""
        resp = raw_request(addr, code, ext, version=version, serialize=serialize, timeout=30)
        if expect is not None and resp.code != expect:
            raise RuntimeError(f"{name}: expected response code {expect}, got {resp.code} ({resp.remark})")
        (self.out_dir / f"{name}.bin").write_bytes(resp.frame)
        self.entries.append({
            "file": f"{name}.bin",
            "target": target,
            "request": {"code": code, "extFields": {k: str(v) for k, v in (ext or {}).items()},
                        "version": version, "language": "PYTHON", "serializeType": serialize},
            "response": {"code": resp.code, "remark": resp.remark, "serializeType":
                         "JSON" if resp.serialize_type == 0 else "ROCKETMQ",
                         "frameBytes": len(resp.frame), "headerBytes": len(resp.frame) - 8 - len(resp.body),
                         "bodyBytes": len(resp.body), "headerVersion": resp.header.get("version")},
            "server_version": server_version,
            "note": note,
        })
        print(f"  {name}.bin  code={resp.code} {len(resp.frame)} bytes", file=sys.stderr)
        return resp


def _create_topic_raw(broker_addr: str, namesrv_addr: str, topic: str, queues: int, broker_name: str) -> None:
    ext = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": queues, "writeQueueNums": queues,
           "perm": 6, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"}
    resp = raw_request(broker_addr, 17, ext)
    if resp.code != 0:
        raise RuntimeError(f"UPDATE_AND_CREATE_TOPIC {topic} failed: {resp.code} {resp.remark}")

    def routed() -> bool:
        r = raw_request(namesrv_addr, 105, {"topic": topic})
        if r.code != 0:
            return False
        qds = [q for q in json.loads(r.text).get("queueDatas", []) if q.get("brokerName") == broker_name]
        return bool(qds) and qds[0]["readQueueNums"] == queues

    wait_until(routed, timeout=60, message=f"route of {topic}")


def _committed(broker_addr: str, group: str, topic: str, queue_id: int) -> int | None:
    r = raw_request(broker_addr, 14, {"consumerGroup": group, "topic": topic, "queueId": queue_id,
                                      "setZeroIfNotFound": "false"})
    return int(r.ext["offset"]) if r.code == 0 else None


def run_scenario_and_capture(namesrv: str, broker: str, broker_name: str, cluster_name: str,
                             capturer: Capturer, cluster: RealCluster | None,
                             classpath: str | None = None) -> str:
    """Set up GoldenTopic/GoldenGroup with a real consumer, then capture the main set of frames."""
    version_resp = raw_request(broker, 28)
    m = re.search(r'"brokerVersionDesc"\s*:\s*"([^"]+)"', version_resp.text)
    server_version = m.group(1) if m else "unknown"
    print(f"broker {broker} runs {server_version}", file=sys.stderr)

    _create_topic_raw(broker, namesrv, TOPIC, 4, broker_name)
    clients = ScenarioClientsProcess(cluster, namesrv_addr=namesrv, classpath=classpath)
    with clients:
        client_id = clients.start_consumer("golden", GROUP, {TOPIC: "tagA || tagB"}, instance_name=INSTANCE,
                                           consume_from="FIRST", namesrv=namesrv)
        clients.wait_until(lambda: clients.queue_ids(TOPIC)["golden"] == [0, 1, 2, 3], timeout=60,
                           message="the golden consumer to hold all 4 queues")
        clients.produce(TOPIC, "tagA", 4, queue_ids=[0, 1, 2, 3], namesrv=namesrv)
        clients.produce(TOPIC, "tagB", 2, queue_ids=[0, 1], namesrv=namesrv)
        clients.produce(TOPIC, "tagC", 1, queue_id=2, namesrv=namesrv)
        clients.wait_until(lambda: len(clients.received()["golden"]) == 6, timeout=60,
                           message="6 messages consumed")
        want = {0: 2, 1: 2, 2: 2, 3: 1}
        wait_until(lambda: {q: _committed(broker, GROUP, TOPIC, q) for q in want} == want, timeout=60,
                   message="committed offsets")

        c = capturer
        sv = server_version
        c.capture("106_get_broker_cluster_info", namesrv, "namesrv", 106, server_version=sv,
                  note="ClusterInfo; brokerAddrs has unquoted integer keys")
        c.capture("105_get_routeinfo_by_topic_v399_fastjson", namesrv, "namesrv", 105, {"topic": TOPIC},
                  version=399, server_version=sv, note="version < 401: plain fastjson route ({0:\"addr\"})")
        c.capture("105_get_routeinfo_by_topic_v479_standard_json", namesrv, "namesrv", 105, {"topic": TOPIC},
                  version=479, server_version=sv, note="version >= 401: standard JSON route ({\"0\":\"addr\"})")
        c.capture("105_error_topic_not_exist", namesrv, "namesrv", 105, {"topic": "NoSuchGoldenTopic"},
                  expect=17, server_version=sv, note="error response: TOPIC_NOT_EXIST (17) with remark, no body")
        c.capture("206_get_all_topic_list_from_nameserver", namesrv, "namesrv", 206, server_version=sv,
                  note="TopicList incl. system, %RETRY% and cluster/broker-name topics")
        c.capture("202_get_topic_stats_info", broker, "broker", 202, {"topic": TOPIC}, server_version=sv,
                  note="TopicStatsTable; MessageQueue-object keys; maxOffset 2,2,2,1")
        c.capture("203_get_consumer_connection_list", broker, "broker", 203, {"consumerGroup": GROUP},
                  server_version=sv, note="ConsumerConnection of GoldenGroup (1 connection)")
        c.capture("208_get_consume_stats", broker, "broker", 208, {"consumerGroup": GROUP}, server_version=sv,
                  note="ConsumeStats; GoldenTopic q0..q3 brokerOffset = consumerOffset = 2,2,2,1")
        c.capture("307_get_consumer_running_info", broker, "broker", 307,
                  {"consumerGroup": GROUP, "clientId": client_id, "jstackEnable": "false"}, server_version=sv,
                  note=f"ConsumerRunningInfo produced by the Java consumer {client_id}, relayed by the broker")
        c.capture("201_get_all_subscriptiongroup_config", broker, "broker", 201, server_version=sv,
                  note="SubscriptionGroupWrapper incl. built-in groups and GoldenGroup")
        c.capture("28_get_broker_runtime_info", broker, "broker", 28, server_version=sv,
                  note="KVTable; all values strings")
        c.capture("38_get_consumer_list_by_group", broker, "broker", 38, {"consumerGroup": GROUP},
                  server_version=sv, note="{\"consumerIdList\":[...]}")
        c.capture("300_query_topic_consume_by_who", broker, "broker", 300, {"topic": TOPIC}, server_version=sv,
                  note="GroupList" + (
                      "; 5.x also lists the TOPIC name: ConsumerManager.registerConsumer adds the "
                      "subscription's topic instead of the group to topicGroupTable (the group itself comes "
                      "from the committed offsets)" if sv.startswith("V5") else ""))
        c.capture("105_binary_request_to_json_server", namesrv, "namesrv", 105, {"topic": TOPIC},
                  serialize="ROCKETMQ", server_version=sv,
                  note="request with ROCKETMQ binary header; shows which header type the reply uses")
    return server_version


def _capture_binary_set(capturer: Capturer, namesrv: str, broker: str, server_version: str | None,
                        serialize: str, how: str) -> None:
    capturer.capture("106_get_broker_cluster_info_rocketmq_header", namesrv, "namesrv", 106,
                     serialize=serialize, server_version=server_version, note=how)
    capturer.capture("105_error_topic_not_exist_rocketmq_header", namesrv, "namesrv", 105,
                     {"topic": "NoSuchGoldenTopic"}, expect=17, serialize=serialize, server_version=server_version,
                     note=f"error with remark in a ROCKETMQ binary header; {how}")
    capturer.capture("38_get_consumer_list_by_group_error_rocketmq_header", broker, "broker", 38,
                     {"consumerGroup": "NoSuchGoldenGroup"}, expect=None, serialize=serialize,
                     server_version=server_version,
                     note=f"broker error reply (no consumer online -> SYSTEM_ERROR) in a ROCKETMQ header; {how}")


def capture_binary_header(capturer: Capturer, server_version: str, namesrv: str | None, broker: str | None,
                          classpath: str | None = None) -> None:
    """Capture replies that carry a ROCKETMQ binary header.

    4.x servers mirror the request's header type, so binary requests to the main cluster suffice.
    5.x servers use their own setting, so a throw-away cluster is started with
    ``-Drocketmq.serialize.type=ROCKETMQ`` and sent ordinary JSON requests.
    """
    if server_version.startswith("V4") and namesrv and broker:
        _capture_binary_set(capturer, namesrv, broker, server_version, "ROCKETMQ",
                            "4.x mirrors the request's header type: request sent with a ROCKETMQ header")
        return
    flag = ["-Drocketmq.serialize.type=ROCKETMQ"]
    with RealCluster(cluster_name="GoldenBinCluster", broker_jvm_args=flag, namesrv_jvm_args=flag,
                     classpath=classpath) as cl:
        print(f"binary-header cluster up in {cl.startup_seconds}s ({cl.version})", file=sys.stderr)
        _capture_binary_set(capturer, cl.namesrv_addr, cl.broker_addr, cl.version, "JSON",
                            "JSON request to a server started with -Drocketmq.serialize.type=ROCKETMQ")


def write_readme(out_dir: Path, entries: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    """Write README.md describing every captured file."""
    lines = [
        "# Golden response frames from a real RocketMQ server",
        "",
        "Generated by `tests/harness/capture_golden.py` - do not edit by hand; re-run the script.",
        "",
        (f"* Captured: {meta['captured_at']} with server version **{meta['server_version']}**"
         f" (Maven artifacts `org.apache.rocketmq:*:{meta['maven_version']}`)."),
        "* Each `.bin` file is one complete response frame exactly as read from the socket: 4-byte",
        "  big-endian length, 4-byte header word (serialize type << 24 | header length), header, body.",
        "* Requests were hand-built by the script (JSON header, `language=PYTHON`, `version` as listed,",
        "  `opaque` = a small counter, so the reply's `opaque` differs between files).",
        f"* Scenario: topic `{TOPIC}` (4 queues) on one master broker; group `{GROUP}` with one Java",
        f"  push consumer `127.0.0.1@{INSTANCE}` (CLUSTERING, AVG, CONSUME_FROM_FIRST_OFFSET) subscribing",
        "  `tagA || tagB`; produced 4 tagA (queues 0-3), 2 tagB (queues 0, 1), 1 tagC (queue 2; filtered",
        "  out by the broker); after consumption committed offsets are q0=2, q1=2, q2=2, q3=1.",
        "* Addresses, ports, timestamps, client ids and msg ids are those of the capture run.",
        "* `manifest.json` holds the same information in machine-readable form.",
        "",
        "| file | to | request (code, extFields, version, header type) | response | notes |",
        "|---|---|---|---|---|",
    ]
    for e in entries:
        req, resp = e["request"], e["response"]
        ext = ", ".join(f"`{k}={v}`" for k, v in req["extFields"].items()) or "-"
        remark = ""
        if resp.get("remark"):
            text = resp["remark"].splitlines()[0].replace("|", "\\|")
            remark = f"; remark `{text[:90]}`"
        lines.append(
            f"| `{e['file']}` | {e['target']} | {req['code']}; {ext}; v{req['version']}; {req['serializeType']} "
            f"| code {resp['code']}, {resp['serializeType']} header ({resp['headerBytes']} B), body "
            f"{resp['bodyBytes']} B; server {e['server_version']}{remark} | {e['note']} |"
        )
    lines += [
        "",
        "Findings from the capture:",
        "",
    ] + [f"* {f}" for f in meta.get("findings", [])] + [""]
    others = sorted(p.parent.name for p in out_dir.glob("*/manifest.json"))
    if others:
        lines += ["Other server versions (same scenario, own README in each directory):", ""]
        lines += [f"* [`{d}/`]({d}/README.md)" for d in others] + [""]
    (out_dir / "README.md").write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory (default tests/golden)")
    ap.add_argument("--namesrv", help="use this running name server instead of starting a cluster")
    ap.add_argument("--broker", help="broker address of the running cluster (with --namesrv)")
    ap.add_argument("--broker-name", default="broker-a")
    ap.add_argument("--cluster-name", default="DefaultCluster")
    ap.add_argument("--no-binary", action="store_true", help="skip the ROCKETMQ-header capture")
    ap.add_argument("--classpath", help="run servers/clients from this class path instead of building "
                    "tests/harness (e.g. a copy built with -Prmq49)")
    ap.add_argument("--maven-version", help="RocketMQ Maven version to name in README (default: from pom.xml)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.bin"):
        old.unlink()
    capturer = Capturer(args.out)
    started = time.monotonic()
    if args.namesrv:
        if not args.broker:
            ap.error("--broker is required with --namesrv")
        server_version = run_scenario_and_capture(args.namesrv, args.broker, args.broker_name,
                                                  args.cluster_name, capturer, None, args.classpath)
        if not args.no_binary:
            capture_binary_header(capturer, server_version, args.namesrv, args.broker, args.classpath)
    else:
        with RealCluster(cluster_name="GoldenCluster", classpath=args.classpath) as cl:
            print(f"cluster up in {cl.startup_seconds}s: {cl.namesrv_addr} / {cl.broker_addr} ({cl.version})",
                  file=sys.stderr)
            server_version = run_scenario_and_capture(cl.namesrv_addr, cl.broker_addr, cl.broker_name,
                                                      cl.cluster_name, capturer, cl, args.classpath)
            if not args.no_binary and server_version.startswith("V4"):
                capture_binary_header(capturer, server_version, cl.namesrv_addr, cl.broker_addr, args.classpath)
        if not args.no_binary and not server_version.startswith("V4"):
            capture_binary_header(capturer, server_version, None, None, args.classpath)

    findings = []
    by_file = {e["file"]: e for e in capturer.entries}
    e = by_file.get("105_binary_request_to_json_server.bin")
    if e:
        mirrored = e["response"]["serializeType"] == "ROCKETMQ"
        findings.append(
            f"A ROCKETMQ-binary-header request to a default (JSON) {server_version} name server is answered "
            f"with a **{e['response']['serializeType']}** header ("
            + ("the server mirrors the request's type)." if mirrored else "the server does not mirror the "
               "request's type).")
        )
    e = by_file.get("106_get_broker_cluster_info_rocketmq_header.bin")
    if e and e["request"]["serializeType"] == "JSON":
        findings.append(
            f"With `-Drocketmq.serialize.type=ROCKETMQ` the servers answer JSON requests with a "
            f"**{e['response']['serializeType']}** header.")
    pom = Path(__file__).resolve().parent / "pom.xml"
    m = re.search(r"<rocketmq.version>([^<]+)</rocketmq.version>", pom.read_text())
    meta = {
        "captured_at": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "server_version": server_version,
        "maven_version": args.maven_version or (m.group(1) if m else "?"),
        "findings": findings,
    }
    (args.out / "manifest.json").write_text(json.dumps({"meta": meta, "files": capturer.entries}, indent=2) + "\n")
    write_readme(args.out, capturer.entries, meta)
    print(f"wrote {len(capturer.entries)} frames to {args.out} in {time.monotonic() - started:.1f}s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
