"""Print the records of an offloader slim topic with pointers resolved, with the
offloader-client package (pip install "./clients/python[azure,s3,kafka]").

    python resolve_pointers.py BOOTSTRAP TOPIC NAME=azblob:CONTAINER NAME=s3:BUCKET NAME=file:ROOT ...

Azure Blob stores read the connection string from AZURE_STORAGE_CONNECTION_STRING;
S3 stores take boto3's credentials, region and AWS_ENDPOINT_URL. Prints one JSON
object per record: partition, offset, key, size and sha256 of the original value.
"""
import hashlib
import json
import os
import sys

from confluent_kafka import Consumer, KafkaError, TopicPartition

from offloader_client import AzureBlobStore, FilesystemStore, Resolver, S3Store

KINDS = {"azblob": lambda c: AzureBlobStore(c, os.environ["AZURE_STORAGE_CONNECTION_STRING"]), "s3": S3Store, "file": FilesystemStore}
bootstrap, topic, specs = sys.argv[1], sys.argv[2], [s.partition("=") for s in sys.argv[3:]]
resolver = Resolver({name: KINDS[where.split(":", 1)[0]](where.split(":", 1)[1]) for name, _, where in specs})

consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "resolve-pointers-example", "enable.auto.commit": False,
                     "isolation.level": "read_committed", "enable.partition.eof": True})
partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
consumer.assign([TopicPartition(topic, p, -2) for p in partitions])  # -2: from the beginning
remaining = set(partitions)
while remaining:
    msg = consumer.poll(1.0)
    if msg is None:
        continue
    if msg.error():
        if msg.error().code() != KafkaError._PARTITION_EOF:
            raise RuntimeError(msg.error())
        remaining.discard(msg.partition())
        continue
    value = resolver.resolve(msg.value(), msg.headers())  # a PointerError names the format's class of refusal
    print(json.dumps({"partition": msg.partition(), "offset": msg.offset(), "key": None if msg.key() is None else msg.key().decode(),
                      "size": None if value is None else len(value),
                      "sha256": None if value is None else hashlib.sha256(value).hexdigest()}))
consumer.close()
