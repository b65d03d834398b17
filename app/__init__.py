"""The application: command line, sessions, (later) the OpenGL view, logging and replay."""
