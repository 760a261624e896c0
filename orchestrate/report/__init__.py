"""What a person sees of a campaign: the live progress output of a run, the live view in a browser,
notifications, `status`, the HTML report with its timeline and SVG drawing of the DAG, and the graph
export.

May use: the doors, dag and recorder, never the engine (the engine calls it).
"""
