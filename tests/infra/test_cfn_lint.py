"""cfn-lint on the synthesised templates (the default stack and the everything-non-default variant).

W3005 ("DependsOn is redundant") is what CDK's generated dependencies trigger; it is the only rule ignored.
cfn-lint exits 0 only when it has nothing to say (4 for warnings alone, 2 for errors). Both templates go
through one run: most of cfn-lint's time is loading its resource specifications.
"""

from __future__ import annotations

import subprocess
import sys

from tests.infra.synth import Synth

# cfnlint has no __main__; this is its console script's entry point, run by this interpreter.
_RUN_CFN_LINT = "import sys; from cfnlint.runner import main; sys.argv[0] = 'cfn-lint'; sys.exit(main())"


def test_cfn_lint_is_clean(synth: Synth, variant: Synth) -> None:
    templates = [str(synth.template_path), str(variant.template_path)]
    result = subprocess.run(
        [sys.executable, "-c", _RUN_CFN_LINT, "--format", "parseable", "-i", "W3005", "--", *templates],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"cfn-lint exit {result.returncode}:\n{result.stdout}{result.stderr}"
