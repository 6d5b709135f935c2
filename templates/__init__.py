"""memdesk's Jinja2 templates, installed as the package ``memdesk_templates`` (see ``pyproject.toml``).

``prompts/`` holds the system and summary prompts (plain text), ``widget/`` the demo shop page (HTML). Code reaches
them through ``importlib.resources.files("memdesk_templates")``, so they load the same from a wheel and from an
editable install.
"""
