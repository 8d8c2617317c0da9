"""The ``KafkaPipelineComponent``: Kafka tables and streaming assets declared in YAML."""

from .component import KafkaPipelineComponent
from .scaffolder import KafkaPipelineScaffolder

__all__ = ["KafkaPipelineComponent", "KafkaPipelineScaffolder"]
