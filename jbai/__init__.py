"""jbai: fixed-confidence best-arm identification in JAX."""

from jbai import families
from jbai.families import Family
from jbai.transport import gamma, golden_section, pair_costs, transport_cost

__version__ = "0.1.0"
