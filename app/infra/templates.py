"""Where the app's templates are: the repository's ``templates/`` folder, installed as the package
``memdesk_templates`` (a name as generic as "templates" would collide in site-packages), read through
``importlib.resources`` when first asked for, the same from a wheel and from an editable install."""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

TEMPLATES_PACKAGE = "memdesk_templates"


def packaged_templates(folder: str) -> Path:
    """A folder of the installed templates package (pip unpacks wheels, so it is a real directory, which is what
    Jinja's FileSystemLoader reads)."""
    try:
        package = files(TEMPLATES_PACKAGE)
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            f"memdesk's templates (the package {TEMPLATES_PACKAGE}) are not installed; reinstall memdesk "
            "(`pip install -e .` in a checkout, or `pip install` the wheel)."
        ) from error
    return Path(str(package.joinpath(folder)))


@lru_cache(maxsize=1)
def prompt_environment() -> Environment:
    """The agent's prompt templates (``templates/prompts``): plain text, so no HTML autoescape; an undefined
    variable is an error, not an empty string in front of the model."""
    return Environment(
        loader=FileSystemLoader(str(packaged_templates("prompts"))),
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
    )
