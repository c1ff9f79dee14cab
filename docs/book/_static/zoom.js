// Click a figure of the book to see it at its full size; a click or Escape closes it. No request leaves the page.
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("article.bd-article img").forEach((img) => {
    if (img.closest("a")) return; // an image that is a link keeps its link
    img.classList.add("workbook-zoomable");
    img.addEventListener("click", () => {
      const overlay = document.createElement("div");
      overlay.className = "workbook-zoom";
      const big = document.createElement("img");
      big.src = img.currentSrc || img.src;
      big.alt = img.alt;
      overlay.appendChild(big);
      const close = () => { overlay.remove(); document.removeEventListener("keydown", onKey); };
      const onKey = (event) => { if (event.key === "Escape") close(); };
      overlay.addEventListener("click", close);
      document.addEventListener("keydown", onKey);
      document.body.appendChild(overlay);
    });
  });
});
