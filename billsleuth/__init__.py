"""BillSleuth as an installable verifiers environment: environment id `billsleuth`.

verifiers (0.4) and prime-rl resolve an environment id by importing the package of that name and
taking the `Taskset` and `Env` subclasses named in its `__all__`; an Environments Hub id,
`owner/billsleuth[@version]`, is imported the same way, by its last part. This package is that
name for the verifiers door, installed with the project (`pip install -e ".[verifiers]"`):

    vf-eval billsleuth -m MODEL --client.base-url URL --no-push --env.taskset.split eval
    [orchestrator.train.source.env.taskset] id = "billsleuth"     # prime-rl (configs/prime-rl/)

Everything it exports is `doors.verifiers_env`'s (the `doors` id keeps working too).
"""

from doors.verifiers_env import BillSleuthEnv, BillSleuthTaskset, load_environment

__all__ = ["BillSleuthEnv", "BillSleuthTaskset", "load_environment"]
