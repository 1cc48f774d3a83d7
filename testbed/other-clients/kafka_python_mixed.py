"""Concurrent kafka-python clients over TLS 1.3 and TLS 1.2 on one SSL listener, for
testbed/scenario tls-mixed. The clients' TLS is Python's ssl module (OpenSSL); their
three SSLContexts write one NSS key log (keylog_filename; the ssl module serialises the
lines of all threads).

    kafka_python_mixed.py HOST:PORT CA_PEM KEYLOG TOPIC

SSLContexts (certificate and hostname checked against CA_PEM):
  tls13         minimum_version TLSv1_3 (OpenSSL's default suite, TLS_AES_256_GCM_SHA384)
  tls12-aes128  maximum_version TLSv1_2, cipher ECDHE-RSA-AES128-GCM-SHA256
  tls12-aes256  maximum_version TLSv1_2, cipher ECDHE-RSA-AES256-GCM-SHA384

1. Admin kpy-mixed-create (tls13) creates TOPIC (2 partitions).
2. At once, each client in a thread of its own (a kafka-python producer or consumer
   opens a bootstrap connection, then one to the broker; the consumer also one to its
   group coordinator):
   - producers kpy-mixed-producer-1 (tls13), -2 (tls12-aes128), -3 (tls13),
     -4 (tls12-aes256), started 0.6 s apart, 10 records of 100 bytes each, two at a
     time every 0.5 s;
   - a classic consumer group TOPIC-group of two members, kpy-mixed-consumer-a
     (tls12-aes128) and kpy-mixed-consumer-b (tls13): the second one's JoinGroup
     rebalances the group; they commit every 5 records and at the end, until together
     they have read all 40 records and their positions are at the end;
   - Admin kpy-mixed-describer (tls12-aes256) describes the cluster, four of the
     broker's configs (ssl.enabled.protocols, ssl.cipher.suites, num.partitions,
     offsets.topic.num.partitions), the topic and lists the groups, every 1.5 s while
     the producers run (a ListGroups while __consumer_offsets is still loading gets
     COORDINATOR_LOAD_IN_PROGRESS, which it reports and takes as it comes).
3. Admin kpy-mixed-admin (tls12-aes128) describes the group, checks its committed offsets
   (40 in all), describes the topic's partitions, deletes the group and the topic.
"""
import ssl
import sys
import threading
import time
import traceback

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.errors import CommitFailedError, CoordinatorLoadInProgressError

bootstrap, ca, keylog, topic = sys.argv[1:5]
group = f"{topic}-group"
PRODUCERS = [("1", "tls13"), ("2", "tls12-aes128"), ("3", "tls13"), ("4", "tls12-aes256")]
RECORDS, SIZE = 10, 100
TOTAL = RECORDS * len(PRODUCERS)
# The broker configs the describer asks for (all of them would be some 17 kB a response).
BROKER_CONFIGS = ["ssl.enabled.protocols", "ssl.cipher.suites", "num.partitions", "offsets.topic.num.partitions"]
T0 = time.monotonic()


def context(kind):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.keylog_filename = keylog
    if kind == "tls13":
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    else:
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_ciphers({"tls12-aes128": "ECDHE-RSA-AES128-GCM-SHA256",
                         "tls12-aes256": "ECDHE-RSA-AES256-GCM-SHA384"}[kind])
    return ctx


CONTEXTS = {k: context(k) for k in ("tls13", "tls12-aes128", "tls12-aes256")}


def tls(kind):
    return dict(bootstrap_servers=bootstrap, security_protocol="SSL", ssl_context=CONTEXTS[kind])


def say(msg):
    print(f"{time.monotonic() - T0:5.1f} s  {msg}", flush=True)


lock = threading.Lock()
seen = set()                # (partition, offset) read by either consumer
ends = {}                   # partition -> offset after the last record produced
producers_done = threading.Event()
errors = []


def thread(name, fn, *args):
    def run():
        try:
            fn(*args)
        except Exception:  # noqa: BLE001 -- reported and fails the run
            errors.append(name)
            say(f"{name} failed:\n{traceback.format_exc()}")
    t = threading.Thread(target=run, name=name)
    t.start()
    return t


def produce(n, kind, delay):
    time.sleep(delay)
    client = f"kpy-mixed-producer-{n}"
    producer = KafkaProducer(client_id=client, linger_ms=5, **tls(kind))
    for i in range(0, RECORDS, 2):
        # Two records at a time (one Produce request), every 0.5 s.
        futures = []
        for j in (i, i + 1):
            value = (b"%s-%d " % (client.encode(), j)) * (SIZE // 16)
            futures.append(producer.send(topic, key=b"k%s-%d" % (n.encode(), j % 3), value=value[:SIZE]))
        for f in futures:
            md = f.get(timeout=20)
            with lock:
                ends[md.partition] = max(ends.get(md.partition, 0), md.offset + 1)
        time.sleep(0.5)
    producer.close()
    say(f"{client} ({kind}): {RECORDS} records produced")


def consume(member, kind, barrier):
    client = f"kpy-mixed-consumer-{member}"
    consumer = KafkaConsumer(topic, group_id=group, client_id=client, auto_offset_reset="earliest",
                             enable_auto_commit=False, heartbeat_interval_ms=1000, **tls(kind))
    read = commits = uncommitted = 0
    deadline = time.monotonic() + 60
    while True:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{client}: not done after 60 s ({len(seen)} of {TOTAL} records seen)")
        for tp, records in consumer.poll(timeout_ms=500).items():
            with lock:
                seen.update((tp.partition, r.offset) for r in records)
            read += len(records)
            uncommitted += len(records)
        done = False
        if producers_done.is_set():
            with lock:
                all_seen = len(seen) >= TOTAL
            assigned = consumer.assignment()
            done = all_seen and assigned and all(consumer.position(tp) >= ends.get(tp.partition, 0) for tp in assigned)
        if uncommitted >= 5 or done:
            try:
                consumer.commit()
                commits += 1
                uncommitted = 0
            except CommitFailedError as e:
                say(f"{client}: commit failed ({type(e).__name__}: the group rebalanced), reading on")
                continue
        if done:
            break
    parts = sorted(tp.partition for tp in consumer.assignment())
    say(f"{client} ({kind}): read {read} records, {commits} commits, partitions {parts} at the end")
    barrier.wait(timeout=30)   # both commit their last positions before either leaves the group
    consumer.close()


def describe(kind):
    admin = KafkaAdminClient(client_id="kpy-mixed-describer", **tls(kind))
    rounds = 0
    while True:
        admin.describe_cluster()
        admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1", BROKER_CONFIGS)])
        admin.describe_topics([topic])
        try:
            admin.list_groups()
        except CoordinatorLoadInProgressError:
            # The consumers' FindCoordinator has just created __consumer_offsets.
            say("kpy-mixed-describer: list_groups: COORDINATOR_LOAD_IN_PROGRESS (error 14), again next round")
        rounds += 1
        if producers_done.wait(1.5):
            break
    admin.close()
    say(f"kpy-mixed-describer ({kind}): {rounds} rounds of describe_cluster, describe_configs, describe_topics, list_groups")


say(f"kafka-python to {bootstrap}, topic {topic}, group {group}")
admin = KafkaAdminClient(client_id="kpy-mixed-create", **tls("tls13"))
admin.create_topics([NewTopic(topic, 2, 1)])
admin.close()
say("kpy-mixed-create (tls13): topic created")
time.sleep(0.5)

barrier = threading.Barrier(2)
consumers = [thread("consumer-a", consume, "a", "tls12-aes128", barrier)]
describer = thread("describer", describe, "tls12-aes256")
producers = [thread(f"producer-{n}", produce, n, kind, 0.6 * i) for i, (n, kind) in enumerate(PRODUCERS)]
time.sleep(1)
consumers.append(thread("consumer-b", consume, "b", "tls13", barrier))
for t in producers:
    t.join()
producers_done.set()
for t in consumers + [describer]:
    t.join()
if errors:
    sys.exit(f"kafka-python: {', '.join(errors)} failed")
if len(seen) != TOTAL or sum(ends.values()) != TOTAL:
    sys.exit(f"kafka-python: {len(seen)} records read, {sum(ends.values())} produced, expected {TOTAL}")

admin = KafkaAdminClient(client_id="kpy-mixed-admin", **tls("tls12-aes128"))
admin.describe_groups([group])
offsets = admin.list_group_offsets(group)
committed = sum(o.offset for o in offsets[group].values())
if committed != TOTAL:
    sys.exit(f"{group} committed {committed} records in all, expected {TOTAL}")
admin.describe_topic_partitions([topic])
admin.delete_groups([group])
admin.delete_topics([topic])
admin.close()
say(f"kpy-mixed-admin (tls12-aes128): group {group} committed {committed}; group and topic deleted")
