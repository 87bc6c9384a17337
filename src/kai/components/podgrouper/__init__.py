"""The pod-grouper component (``component``) and the grouping rules it applies (``rules``)."""

from kai.components.podgrouper.component import PodGrouper
from kai.components.podgrouper.rules.model import Settings

__all__ = ["PodGrouper", "Settings"]
