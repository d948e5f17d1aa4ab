"""The shipped recipes (`*.yaml` beside this file); loaded by `nabench.pipelines.registry`."""
