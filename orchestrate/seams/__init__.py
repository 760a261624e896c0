"""Human seams: what each seam offers, how an answer is recorded and what it does, and the one place that
asks a person anything.

May use: the doors, dag and recorder.
"""
