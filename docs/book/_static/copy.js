// A "Copy" button on each code block of the book (code cells, commands), as Jupyter Book and d2l pages have: it
// copies the block's text without the prompts of a shell session ("$ ") or of Python (">>> ", "... ").
document.addEventListener("DOMContentLoaded", () => {
  const prompts = /^(\$ |>>> |\.\.\. )/;
  document.querySelectorAll("article.bd-article div.highlight").forEach((block) => {
    const pre = block.querySelector("pre");
    if (!pre) return;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "workbook-copy";
    button.textContent = "Copy";
    button.title = "Copy this code";
    button.addEventListener("click", async () => {
      const text = pre.innerText.split("\n").map((line) => line.replace(prompts, "")).join("\n");
      try {
        await navigator.clipboard.writeText(text);
      } catch (err) { // a page opened from a file: no clipboard API; select the text for Ctrl-C instead
        const range = document.createRange();
        range.selectNodeContents(pre);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        button.textContent = "Selected";
        return;
      }
      button.textContent = "Copied";
      setTimeout(() => { button.textContent = "Copy"; }, 1500);
    });
    block.classList.add("workbook-copyable");
    block.appendChild(button);
  });
});
