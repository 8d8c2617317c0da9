"""The Kafka sink: serializer, partitioners and writers per delivery guarantee."""

from .partitioners import java_default_partition, murmur2

__all__ = ["java_default_partition", "murmur2"]
