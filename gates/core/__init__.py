"""The shared contract: exit codes and errors, processes, git, surfaces, the DAG file and its schedule."""
