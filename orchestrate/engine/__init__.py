"""The engine: states, the transition table (data), the loop, the context every handler gets, scheduling,
and one handler per state in handlers/. It uses dag, recorder, workers and seams; nothing but the CLI
and replay import it."""
