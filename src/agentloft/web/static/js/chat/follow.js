// Following a reply as it grows: the view stays at the bottom unless the reader scrolled up; then a
// "scroll to bottom" button appears. Growth is noticed by a ResizeObserver on the message list, so text
// that arrives, markdown that renders late (code blocks, tables, math) and cards that open all count; and
// on the view itself, so the end stays in sight when the view gets shorter (a phone's keyboard opens).

const SLACK_PX = 24; // this close to the bottom counts as "at the bottom"

/** Keep `scroller` following the end of `content`; `button` is shown while the reader is elsewhere. */
export function followBottom(scroller, content, button) {
  let stick = true;
  let lastTop = scroller.scrollTop;

  const atBottom = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight <= SLACK_PX;
  const showButton = () => { button.hidden = stick || atBottom(); };
  const toBottom = (smooth = false) => {
    scroller.scrollTo({ top: scroller.scrollHeight, behavior: smooth ? 'smooth' : 'instant' });
  };

  scroller.addEventListener('scroll', () => {
    const top = scroller.scrollTop;
    if (atBottom()) stick = true;
    else if (top < lastTop) stick = false; // only the reader moves the view up: growth never does
    lastTop = top;
    showButton();
  }, { passive: true });

  const resized = new ResizeObserver(() => {
    if (stick) toBottom();
    showButton();
  });
  resized.observe(content);
  resized.observe(scroller); // the view shrinks too: a phone's keyboard opens, the window is made smaller

  button.addEventListener('click', () => {
    stick = true;
    toBottom(true);
    button.hidden = true;
  });

  return {
    /** Go to the end now and follow from there (a message was sent, a conversation opened). */
    jump() { stick = true; toBottom(); showButton(); },
    get following() { return stick; },
  };
}
