"""memdesk's Jinja2 templates, installed as the package ``memdesk_templates`` (see ``pyproject.toml``).

``prompts/`` holds the agent's system prompt (plain text), ``widget/`` the demo shop page and ``console/`` the staff
console (HTML). Code reaches them through ``app.infra.templates``, so they load the same from a wheel and from an
editable install. The compressor's own prompts ship with the ``compression`` package.
"""
