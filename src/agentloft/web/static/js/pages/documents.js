// Documents list: the "new document" dialog (the list, tabs, search and pages are rendered by the server).
import { api } from '../api.js';
import { busy, dialog, readForm, resetFormErrors, showFormError } from '../dom.js';
import { formatDate } from '../i18n.js';

const form = document.getElementById('new-form');
const newDialog = dialog(document.getElementById('new-dialog'));

document.getElementById('new-doc').addEventListener('click', () => {
  form.reset();
  form.elements.type.value = document.getElementById('new-doc').dataset.type;
  resetFormErrors(form);
  newDialog.open();
});

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  resetFormErrors(form);
  await busy(form.querySelector('button[type=submit]'), async () => {
    try {
      const values = readForm(form);
      const created = await api('POST', '/api/agent-documents', {
        title: values.title, type: values.type, tags: values.tags || null, content: values.content,
      });
      window.location.assign(`/agent-documents/${encodeURIComponent(created.id)}`);
    } catch (error) {
      showFormError(form, error);
    }
  });
});

for (const el of document.querySelectorAll('time[data-local-time]')) el.textContent = formatDate(el.dateTime);
