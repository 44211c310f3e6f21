"""What would make a pending workload fit: verdicts from the settled state, options checked
by running the fit model on changed copies of the scenario (`--explain`)."""

from harness.whatif.render import Whys, render_text, to_json
from harness.whatif.workloads import Explanation, explain

__all__ = ["Explanation", "Whys", "explain", "render_text", "to_json"]
