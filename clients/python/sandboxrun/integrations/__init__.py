"""Adapters that make a sandboxrun session the sandbox of an agent framework.

Each submodule imports its framework when it is imported, never before:
``import sandboxrun`` stays standard-library only, and a host installs the
framework it uses (the ``deepagents``, ``adk`` and ``openai-agents`` extras
name the versions each adapter follows).

- ``sandboxrun.integrations.deepagents``: ``SandboxrunBackend``, a Deep Agents
  ``SandboxBackendProtocol``.
- ``sandboxrun.integrations.adk``: ``SandboxrunCodeExecutor``, a Google ADK
  ``BaseCodeExecutor``.
- ``sandboxrun.integrations.openai_agents``: ``SandboxrunSandboxClient``, an
  OpenAI Agents SDK ``BaseSandboxClient``, and its session.

Every adapter maps the framework onto one session of a sandboxrun server:
commands go through a skill's ``exec`` (its ``allowed-tools`` and the
operator policy decide), files through the session's file API (no shell, no
quoting, no interpreter needed in the image).
"""
