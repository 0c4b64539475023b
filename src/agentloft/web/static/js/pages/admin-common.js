// What the admin pages share: a table reloaded from the API, the editor dialog's save, a create form, a row's
// delete, and a change made in place (a toggle, a select). Each page keeps only what is its own: its rows, its
// form's body, its extra controls.
import { api, loadAll } from '../api.js';
import { busy, confirmDialog, readForm, resetFormErrors, showError, showFormError } from '../dom.js';

/** The function that reloads a table: every item of `url` as `row(item)`; `empty` shows when none. */
export function tableRefresher({ url, tbody, row, empty = null }) {
  return async function refresh() {
    const items = await loadAll(url);
    tbody.replaceChildren(...items.map(row));
    if (empty) empty.hidden = items.length > 0;
    return items;
  };
}

/** The editor form's submit: `save()` sends it; then the dialog closes and the table reloads. An API
 * error (or one thrown by `save` with `fields`) shows on the form, which stays open. */
export function onSave(form, save, { modal, refresh }) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    resetFormErrors(form);
    await busy(form.querySelector('button[type=submit]'), async () => {
      try {
        await save();
        modal.close();
        await refresh();
      } catch (error) {
        showFormError(form, error);
      }
    });
  });
}

/** The page's create form (not a dialog): its fields are POSTed to `url`, then the form empties and the
 * table reloads. Each problem shows once: beside its field, or in `errorBox`. */
export function onCreate(form, url, { errorBox, refresh }) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    resetFormErrors(form);
    showError(errorBox, null);
    await busy(form.querySelector('button[type=submit]'), async () => {
      try {
        await api('POST', url, readForm(form));
        form.reset();
        await refresh();
      } catch (error) {
        showFormError(form, error, errorBox);
      }
    });
  });
}

/** Delete `url` once the user confirms `question` in the page's own dialog (``confirmDialog``, as a chat's
 * delete asks); a refusal shows in `errorBox`. */
export async function removeItem({ button, question, url, errorBox, refresh }) {
  if (!(await confirmDialog(question))) return;
  showError(errorBox, null);
  await busy(button, async () => {
    try {
      await api('DELETE', url);
      await refresh();
    } catch (error) {
      showError(errorBox, error);
    }
  });
}

/** Send one change from a control in a row; the table reloads either way, so it shows what was stored. */
export async function changeItem({ control, method, url, body, errorBox, refresh }) {
  showError(errorBox, null);
  await busy(control, async () => {
    try { await api(method, url, body); } catch (error) { showError(errorBox, error); }
    await refresh();
  });
}
