// Knowledge list: the "new collection" dialog (the list itself is rendered by the server).
import { api } from '../api.js';
import { busy, dialog, readForm, resetFormErrors, showFormError } from '../dom.js';

const form = document.getElementById('new-form');
const newDialog = dialog(document.getElementById('new-dialog'));

document.getElementById('new-kb').addEventListener('click', () => {
  form.reset();
  resetFormErrors(form);
  newDialog.open();
});

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  resetFormErrors(form);
  await busy(form.querySelector('button[type=submit]'), async () => {
    try {
      const values = readForm(form);
      const created = await api('POST', '/api/knowledge', { name: values.name, description: values.description });
      window.location.assign(`/knowledge/${encodeURIComponent(created.id)}`);
    } catch (error) {
      showFormError(form, error);
    }
  });
});
