"""``kai dashboard``: a read-only web page over the one view the CLI renders (``kai.components.insight``), with what
a terminal cannot show well: each queue's history, the nodes' GPUs, the last cycles and what-if runs drawn as both
runs. It writes nothing to the cluster."""
