"""One kafka-python session against a testbed broker, for testbed/scenario
other-clients: Admin creates two topics, a gzip producer writes 30 records, a
classic consumer group reads and commits them, Admin describes the broker's
configs, the group, its offsets and the topic, deletes the group and a topic.

    kafka_python_session.py HOST:PORT
"""
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

bootstrap = sys.argv[1]
admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kpy-admin")
admin.create_topics([NewTopic("py-orders", 3, 1), NewTopic("kc-orders", 2, 1)])
time.sleep(1)

producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="kpy-producer", compression_type="gzip", linger_ms=5)
for i in range(30):
    producer.send("py-orders", key=b"k%d" % (i % 5), value=b"order-%d" % i)
producer.flush()
producer.close()

consumer = KafkaConsumer("py-orders", bootstrap_servers=bootstrap, group_id="py-group", client_id="kpy-consumer",
                         auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=6000)
read = 0
for _ in consumer:
    read += 1
    if read % 10 == 0:
        consumer.commit()
consumer.commit()
consumer.close()
if read != 30:
    sys.exit(f"kafka-python consumer read {read} records, expected 30")
print(f"kafka-python: produced 30 (gzip), consumed {read} in group py-group")

admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")])
print("groups:", admin.list_groups())
print("describe:", admin.describe_groups(["py-group"]))
offsets = admin.list_group_offsets("py-group")
committed = sum(o.offset for o in offsets["py-group"].values())
if committed != 30:
    sys.exit(f"py-group committed {committed} records in all, expected 30")
admin.describe_topic_partitions(["py-orders"])
admin.delete_groups(["py-group"])
admin.delete_topics(["py-orders"])
admin.close()
