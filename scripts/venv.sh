# Sourced by install-deps.sh and test.sh: use the active virtual environment, else the repo's
# .venv (created when missing). Debian/Ubuntu's system Python refuses `pip install`
# (externally managed), so the project's commands never install into it.
_venv_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z "${VIRTUAL_ENV:-}" ]]; then
    if [[ ! -x "$_venv_repo/.venv/bin/python" ]]; then
        python3 -m venv "$_venv_repo/.venv"
    fi
    # shellcheck disable=SC1091
    . "$_venv_repo/.venv/bin/activate"
fi
unset _venv_repo
