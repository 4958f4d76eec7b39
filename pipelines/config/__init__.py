"""The curate job's configuration on the driver, checked before any work: the source config
(``job``), input planning (``inputs``) and the command line around a Beam job (``options``:
strict Beam options, logging, stage lines)."""
