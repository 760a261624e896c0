"""What the gates share: the Verdict record, the common main(), markdown link parsing and coherence's
project checks. The engine imports the Verdict from here too.

May use: the kernel of `orchestrate`, as every gate.
"""
