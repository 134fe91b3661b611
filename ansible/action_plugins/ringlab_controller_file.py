"""ringlab_controller_file: writes a file on the controller, inside the controller's own Ansible process.

run.yml leaves each job's outcome on the controller the moment the job ends. ansible.builtin.copy with
delegate_to: localhost would do it too, but starts two modules in new Python processes per file (about a second
per job on a two-core machine, every job of a campaign). This action writes the file directly and atomically (a
temporary file beside it, then a rename), creating its directory if needed, and never contacts the node.

    - ringlab_controller_file:
        dest: /abs/path/outcome.json    # absolute, on the controller
        content: "{{ data | to_json }}"  # text; a list or mapping is written as JSON
"""

import json
import os
import tempfile

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("content", "dest"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        dest = self._task.args.get("dest")
        content = self._task.args.get("content")
        if not isinstance(dest, str) or not os.path.isabs(dest):
            raise AnsibleActionFail(f"dest must be an absolute path on the controller, not {dest!r}")
        if isinstance(content, (dict, list)):
            content = json.dumps(content)
        if not isinstance(content, str):
            raise AnsibleActionFail("content must be text, a list or a mapping")
        directory = os.path.dirname(dest)
        os.makedirs(directory, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=".ringlab-")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(content)
            os.chmod(temporary, 0o644)
            os.replace(temporary, dest)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise
        result.update(changed=True, dest=dest)
        return result
