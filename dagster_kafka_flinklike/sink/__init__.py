"""The Kafka sink: serializer, partitioners and writers per delivery guarantee."""

from .partitioners import KafkaPartitioner, java_default_partition, load_partitioner, murmur2
from .serializer import ROW_KIND

__all__ = ["ROW_KIND", "KafkaPartitioner", "java_default_partition", "load_partitioner", "murmur2"]
