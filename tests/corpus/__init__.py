"""The Flink SQL corpus: Kafka-only jobs run here and by Apache Flink, compared (see harness)."""
