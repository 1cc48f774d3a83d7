"""kafka-python sessions over TLS for testbed/scenario tls-python. The client's
TLS is Python's ssl module (OpenSSL), and its SSLContext writes the NSS key log.

    kafka_python_tls.py HOST:PORT CA_PEM KEYLOG MODE NAME

MODE:
  tls13         TLS 1.3 with OpenSSL's defaults: Admin creates topic NAME (2
                partitions), a producer writes 60 records of 2 KiB, a classic
                consumer group NAME-group reads them with commits, Admin describes
                configs, groups, offsets and the topic, deletes the group and the topic.
  tls12:CIPHER  TLS 1.2 only, the one OpenSSL cipher CIPHER (e.g. ECDHE-RSA-AES128-SHA256):
                Admin creates topic NAME (1 partition) unless it exists, a producer
                writes 5 records, a classic group NAME-group reads them and commits.
"""
import ssl
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.errors import TopicAlreadyExistsError

bootstrap, ca, keylog, mode, name = sys.argv[1:6]

ctx = ssl.create_default_context(cafile=ca)
ctx.keylog_filename = keylog
if mode.startswith("tls12:"):
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(mode.split(":", 1)[1])
    records, size, partitions = 5, 100, 1
elif mode == "tls13":
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    records, size, partitions = 60, 2048, 2
else:
    sys.exit(f"unknown mode {mode}")
tls = dict(bootstrap_servers=bootstrap, security_protocol="SSL", ssl_context=ctx)
tag = mode.replace(":", "-").lower()

admin = KafkaAdminClient(client_id=f"kpy-admin-{tag}", **tls)
try:
    admin.create_topics([NewTopic(name, partitions, 1)])
except TopicAlreadyExistsError:
    pass
time.sleep(1)

producer = KafkaProducer(client_id=f"kpy-producer-{tag}", linger_ms=5, **tls)
for i in range(records):
    value = (b"%s-%d " % (tag.encode(), i)) * (size // 16)
    producer.send(name, key=b"k%d" % (i % 4), value=value[:size])
producer.flush()
producer.close()

group = f"{name}-group-{tag}"
consumer = KafkaConsumer(name, group_id=group, client_id=f"kpy-consumer-{tag}", auto_offset_reset="earliest",
                         enable_auto_commit=False, consumer_timeout_ms=5000, **tls)
read = 0
for _ in consumer:
    read += 1
    if read % 20 == 0:
        consumer.commit()
consumer.commit()
consumer.close()
if read < records:
    sys.exit(f"kafka-python consumer read {read} records, expected at least {records}")
print(f"kafka-python {mode}: produced {records} records of {size} B to {name}, group {group} read {read}")

if mode == "tls13":
    admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")])
    print("groups:", sorted(g[0] if isinstance(g, tuple) else str(g) for g in admin.list_groups()))
    admin.describe_groups([group])
    offsets = admin.list_group_offsets(group)
    committed = sum(o.offset for o in offsets[group].values())
    if committed != records:
        sys.exit(f"{group} committed {committed} records in all, expected {records}")
    admin.describe_topic_partitions([name])
    admin.delete_groups([group])
    admin.delete_topics([name])
admin.close()
